"""The attention implementation hkv registers with transformers: K/V live in hkv's paged pools.

transformers calls `paged_attention_hook` in every attention layer with this step's queries,
keys and values (after RoPE and norms) and whatever extra keyword the caller gave the model's
forward; hkv passes the step's `PagedStep` as `hkv_step=` (no globals). The hook

1. stores the new K/V into the layer's region through its group's slot mapping (KV-shared
   layers, Gemma 3n, store nothing: they read the layer they share with), then
2. runs paged attention over its group's block tables with the layer's own options.

MLA layers (DeepSeek-V2/V3) keep a latent instead of K/V: their module stores it itself
(through the cache hkv gives it) and the hook attends over it (mla_attention_hook.py).

The name is not registered as a mask function, so transformers passes `attention_mask=None`
and builds no mask: causality, windows and chunks are the kernel's (`AttentionParams`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from hkv.kernels import AttentionParams, Backend, paged_attention_forward, store_kv_cache
from hkv.runtime.live.mla_attention_hook import latent_paged_attention

HOOK_NAME = "hkv_paged"


@dataclass(frozen=True)
class LayerBinding:
    """Where one attention layer's K/V live and what its group keeps.

    `chunk_size` is Llama 4's chunk, which the model does not pass (the group keeps exactly the
    chunk). `kept_window` is the window of a sliding group (None: the group keeps every token);
    the window the model passes must not exceed it, or the kernel would read released pages.
    `stores` is False for KV-shared layers. `is_mla`: the caches are one latent view (both
    fields), read by mla_attention_hook.py.
    """

    layer_idx: int
    group_id: int  # whose block tables and slot mappings it uses
    region: int  # its layer slot in the group's pool (the owner's, for a KV-shared layer)
    key_cache: torch.Tensor  # [num_blocks, block_size, num_kv_heads, head_dim]
    value_cache: torch.Tensor
    chunk_size: int | None = None
    kept_window: int | None = None
    stores: bool = True
    is_mla: bool = False


@dataclass(frozen=True)
class PagedStep:
    """One packed forward: all scheduled tokens of a step, sequence after sequence."""

    bindings: Mapping[int, LayerBinding]  # layer index -> binding
    positions: torch.Tensor  # [num_tokens] int64, absolute position of each token
    query_start_loc: torch.Tensor  # [num_seqs + 1] int32
    seq_lens: torch.Tensor  # [num_seqs] int32, context length including this step
    max_query_len: int
    block_tables: tuple[torch.Tensor, ...]  # per group [num_seqs, max_blocks] int32
    slot_mappings: tuple[torch.Tensor, ...]  # per group [num_tokens] int64
    backend: Backend = "torch"  # the kernels' implementation, resolved once for the step
    # per group: the torch kernels' checks and gather indices, done by the group's first layer this
    # step and reused by its others (the one mutable part of a step)
    memos: dict[int, dict[Any, Any]] = field(default_factory=dict)


def register_paged_attention() -> str:
    """Register the hook with transformers (idempotent); returns its implementation name."""
    from transformers import AttentionInterface

    AttentionInterface.register(HOOK_NAME, paged_attention_hook)
    return HOOK_NAME


def paged_attention_hook(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    *,
    scaling: float | None = None,
    dropout: float = 0.0,
    sliding_window: int | None = None,
    softcap: float | None = None,
    s_aux: torch.Tensor | None = None,
    hkv_step: PagedStep | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """query [1, H, T, D], key/value [1, KVH, T, D] -> ([1, T, H, D], None)."""
    layer_idx = module.layer_idx  # type: ignore[attr-defined]
    if hkv_step is None:
        raise RuntimeError(f"layer {layer_idx}: {HOOK_NAME} attention called without hkv_step "
                           "(run the model through hkv's ModelRunner)")
    if query.shape[0] != 1:
        raise RuntimeError(f"layer {layer_idx}: {HOOK_NAME} expects one packed sequence, "
                           f"got batch {query.shape[0]}")
    binding = hkv_step.bindings[layer_idx]
    scale = scaling if scaling is not None else module.scaling  # type: ignore[attr-defined]
    if binding.kept_window is not None and (sliding_window is None or sliding_window > binding.kept_window):
        raise RuntimeError(f"layer {layer_idx}: the model attends to window {sliding_window}, but its cache "
                           f"group keeps only {binding.kept_window} tokens")
    params = AttentionParams(scale, sliding_window, binding.chunk_size, softcap)
    if binding.is_mla:  # the module stored its latent already
        return latent_paged_attention(module, query, binding, hkv_step, params), None
    query = _llama4_temperature_fix(module, query, hkv_step.positions)
    q = query[0].transpose(0, 1)  # [T, H, D]
    head_dim_v = value.shape[-1]
    if head_dim_v < key.shape[-1]:  # a latent decompressed per head (MiniCPM3): its pages pad V to K's size
        value = torch.nn.functional.pad(value, (0, key.shape[-1] - head_dim_v))
    memo = hkv_step.memos.setdefault(binding.group_id, {})
    if binding.stores:
        store_kv_cache(key[0].transpose(0, 1), value[0].transpose(0, 1), binding.key_cache,
                       binding.value_cache, hkv_step.slot_mappings[binding.group_id], memo=memo,
                       backend=hkv_step.backend)
    out = paged_attention_forward(
        q, binding.key_cache, binding.value_cache, hkv_step.block_tables[binding.group_id],
        hkv_step.query_start_loc, hkv_step.seq_lens, params,
        sinks=s_aux, max_query_len=hkv_step.max_query_len, memo=memo, backend=hkv_step.backend,
    )
    return out[..., :head_dim_v].unsqueeze(0), None


def _llama4_temperature_fix(module: torch.nn.Module, query: torch.Tensor,
                            positions: torch.Tensor) -> torch.Tensor:
    """Llama 4 scales NoPE layers' queries by a factor of the token position, which it takes as
    arange(T) + cached length; in a packed batch the true positions differ, so replace the factor."""
    if not getattr(module, "attn_temperature_tuning", False) or getattr(module, "use_rope", True):
        return query
    floor_scale, attn_scale = module.floor_scale, module.attn_scale  # type: ignore[attr-defined]
    assumed = torch.arange(query.shape[2], device=query.device, dtype=torch.float32)

    def factor(pos: torch.Tensor) -> torch.Tensor:
        return torch.log1p(torch.floor((pos.float() + 1.0) / floor_scale)) * attn_scale + 1.0

    ratio = factor(positions) / factor(assumed)
    return (query * ratio.view(1, 1, -1, 1)).to(query.dtype)
