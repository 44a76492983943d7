"""The SGLang release hkv follows when --sglang-version is not given.

Apart from server_args.py (which uses it as SglangServerArgs.version's default) so that the CLI can
name it in --help without importing the SGLang planner, which a vLLM-only plan never needs.
"""

from __future__ import annotations

DEFAULT_SGLANG_VERSION = "0.5.23"
