"""Choice between the Triton kernels and the torch reference, and the dispatching entry points.

Rule: `HKV_ATTENTION=triton|torch` forces one implementation; unset (or empty) means Triton for CUDA
tensors when triton is installed, torch otherwise. The torch path is `torch_paged.py` (decodes
batched; `reference.py` stays the oracle). The variable is read on every call, so tests and
tools may change it at run time. Triton is imported only when the Triton path is taken, so this module
(and `hkv.kernels`) works with torch alone.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any, Literal

import torch

from hkv.kernels.params import AttentionParams
from hkv.kernels.torch_paged import paged_attention_torch, store_kv_torch

Backend = Literal["triton", "torch"]
BACKEND_ENV_VAR = "HKV_ATTENTION"
BACKENDS: tuple[Backend, ...] = ("triton", "torch")


def triton_available() -> bool:
    return importlib.util.find_spec("triton") is not None


def resolve_backend(device: torch.device | str | None = None) -> Backend:
    """The implementation to use for tensors on `device` (default: CUDA if torch sees one).

    Raises ValueError on an unknown HKV_ATTENTION value and ImportError when triton is forced but absent.
    """
    forced = os.environ.get(BACKEND_ENV_VAR, "").strip().lower()
    if forced not in ("", *BACKENDS):
        raise ValueError(
            f"{BACKEND_ENV_VAR}={os.environ[BACKEND_ENV_VAR]!r} is not valid; "
            f"allowed values: {', '.join(BACKENDS)} "
            "(or unset for automatic choice)"
        )
    if forced == "triton" and not triton_available():
        raise ImportError(f"{BACKEND_ENV_VAR}=triton but the triton package is not installed")
    if forced:
        return forced  # type: ignore[return-value]
    on_cuda = torch.cuda.is_available() if device is None else torch.device(device).type == "cuda"
    return "triton" if on_cuda and triton_available() else "torch"


def store_kv_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    memo: dict[Any, Any] | None = None,
    backend: Backend | None = None,
) -> None:
    """Write new K/V into paged slots in place (contract: `hkv.kernels.store_kv`), on `backend`
    (None: resolved now). `memo`: the torch path's per-step, per-group cache of row indices."""
    if (backend or resolve_backend(key.device)) == "triton":
        from hkv.kernels.store_kv import store_kv

        store_kv(key, value, key_cache, value_cache, slot_mapping)
    else:
        store_kv_torch(key, value, key_cache, value_cache, slot_mapping, memo)


def paged_attention_forward(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    params: AttentionParams,
    *,
    sinks: torch.Tensor | None = None,
    max_query_len: int | None = None,
    memo: dict[Any, Any] | None = None,
    backend: Backend | None = None,
) -> torch.Tensor:
    """Paged attention over a mixed batch (contract: `hkv.kernels.paged_attention`), on `backend`
    (None: resolved now; a caller running many layers resolves once per step).

    `max_query_len` is only a launch hint for Triton; the torch path ignores it. `memo` is the
    torch path's per-step, per-block-table cache of checks and gather indices (see `torch_paged`).
    """
    if (backend or resolve_backend(query.device)) == "triton":
        from hkv.kernels.paged_attention import paged_attention

        return paged_attention(
            query,
            key_cache,
            value_cache,
            block_table,
            query_start_loc,
            seq_lens,
            params,
            sinks=sinks,
            max_query_len=max_query_len,
        )
    return paged_attention_torch(
        query, key_cache, value_cache, block_table, query_start_loc, seq_lens, params, sinks=sinks, memo=memo
    )
