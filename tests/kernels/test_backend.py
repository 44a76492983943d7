"""Choice of implementation: HKV_ATTENTION forcing, automatic choice, and a torch-only install."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from hkv.kernels import backend


@pytest.fixture(autouse=True)
def _no_forced_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HKV_ATTENTION", raising=False)


@pytest.mark.parametrize(
    ("value", "expected"), [("triton", "triton"), ("torch", "torch"), (" Torch ", "torch")]
)
def test_env_forces_backend(value: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HKV_ATTENTION", value)
    assert backend.resolve_backend("cpu") == expected
    assert backend.resolve_backend("cuda") == expected


def test_invalid_env_value_names_variable_and_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HKV_ATTENTION", "flash")
    with pytest.raises(
        ValueError, match=r"HKV_ATTENTION='flash' is not valid; allowed values: triton, torch"
    ):
        backend.resolve_backend()


def test_automatic_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HKV_ATTENTION", "")  # empty counts as unset
    assert backend.resolve_backend("cpu") == "torch"
    assert backend.resolve_backend(torch.device("cuda", 0)) == "triton"
    expected_default = "triton" if torch.cuda.is_available() else "torch"
    assert backend.resolve_backend() == expected_default
    monkeypatch.setattr(backend, "triton_available", lambda: False)
    assert backend.resolve_backend("cuda") == "torch"


def test_forcing_triton_without_triton_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "triton_available", lambda: False)
    monkeypatch.setenv("HKV_ATTENTION", "triton")
    with pytest.raises(ImportError, match="triton package is not installed"):
        backend.resolve_backend()


def test_entry_points_survive_submodule_imports() -> None:
    import hkv.kernels
    import hkv.kernels.paged_attention
    import hkv.kernels.store_kv  # noqa: F401  (binds submodule names on the package)

    assert callable(hkv.kernels.store_kv_cache) and callable(hkv.kernels.paged_attention_forward)


def test_torch_only_install_works() -> None:
    # triton made unimportable: hkv.kernels still imports, auto-selects torch and computes
    script = """
import sys
sys.modules["triton"] = None
import torch
from hkv.kernels import AttentionParams, paged_attention_forward, resolve_backend, store_kv_cache
assert resolve_backend("cuda") == "torch"
kc = torch.zeros(2, 4, 1, 8); vc = torch.zeros(2, 4, 1, 8)
store_kv_cache(torch.ones(3, 1, 8), torch.ones(3, 1, 8), kc, vc, torch.tensor([4, 5, 6]))
out = paged_attention_forward(torch.ones(3, 2, 8), kc, vc, torch.tensor([[1]], dtype=torch.int32),
    torch.tensor([0, 3]), torch.tensor([3]), AttentionParams(scale=1.0))
assert torch.equal(out, torch.ones(3, 2, 8)), out
assert "triton" not in {m.split(".")[0] for m, v in sys.modules.items() if v is not None}
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env={"HKV_ATTENTION": ""}
    )
    assert result.returncode == 0, result.stderr
