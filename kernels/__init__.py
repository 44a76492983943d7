"""Paged KV-cache kernels: Triton on CUDA, pure torch elsewhere (see `backend.py` for the choice).

Entry points dispatch on `HKV_ATTENTION=triton|torch` (unset: Triton for CUDA tensors):

    store_kv_cache(key, value, key_cache, value_cache, slot_mapping, memo=None, backend=None) -> None
    paged_attention_forward(query, key_cache, value_cache, block_table, query_start_loc, seq_lens,
                            params, *, sinks=None, max_query_len=None, memo=None, backend=None) -> Tensor

The Triton wrappers live in the submodules `store_kv` / `paged_attention` (imported lazily, as they
import triton); the entry points are named differently on purpose, because importing a submodule binds
its name on this package and would shadow a function of the same name.
"""

from hkv.kernels.backend import (
    BACKEND_ENV_VAR,
    BACKENDS,
    Backend,
    paged_attention_forward,
    resolve_backend,
    store_kv_cache,
)
from hkv.kernels.params import AttentionParams
from hkv.kernels.reference import paged_attention_reference, store_kv_reference

__all__ = [
    "BACKEND_ENV_VAR",
    "BACKENDS",
    "AttentionParams",
    "Backend",
    "paged_attention_forward",
    "paged_attention_reference",
    "resolve_backend",
    "store_kv_cache",
    "store_kv_reference",
]
