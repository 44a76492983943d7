"""Multi-head latent attention (MLA: DeepSeek-V2/V3, Kimi-Linear's full layers) on hkv's paged latent.

transformers' MLA modules cache the compressed KV, not K and V: each forward computes the
normalized latent `kv_nope` [1, 1, T, kv_lora_rank] and the shared rope key `k_rot`
[1, 1, T, qk_rope_head_dim] (rope applied; Kimi's NoPE layers leave it as is), hands them to
`cache.update(kv_nope, k_rot, layer_idx)`, and only then expands them into per-head K and V
with `kv_b_proj`. hkv keeps exactly that pair: one latent of kv_lora_rank + qk_rope_head_dim
values per token and layer, the planner's MLA page (PagedKVCache views it as
[num_blocks, block_size, 1, latent_dim]).

1. `bind_latent_attention` wraps the module's forward so that its `cache` is a
   `LatentCacheWriter` for the step in progress; its `update` stores [kv_nope, k_rot] through
   the group's slot mapping and returns the step's own latents unchanged (the module expands
   them as usual; the hook does not read that expansion).
2. The registered hook (attention_hook.py) sends MLA layers to `latent_paged_attention`,
   which attends over the paged latents with kv_b_proj absorbed, as vLLM's MLA decode does.
   kv_b_proj's rows are, per head h, W_UK[h] (qk_nope_head_dim x kv_lora_rank) then W_UV[h]
   (v_head_dim x kv_lora_rank); for a cached latent c and rope key k_rot

       q_nope . (W_UK c) + q_rot . k_rot = [W_UK^T q_nope, q_rot] . [c, k_rot]
       sum_s p_s (W_UV c_s)              = W_UV (sum_s p_s c_s)

   so the query [W_UK^T q_nope, q_rot] attends to the one shared key head [c, k_rot] with the
   module's own scale (yarn's mscale included: transformers passes `scaling`), and W_UV maps
   the attended latent to v_head_dim. The scores and softmax are the module's; only the order
   of float sums differs from its expanded K/V.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from hkv.kernels import AttentionParams, paged_attention_forward, store_kv_cache
from hkv.runtime.live.paged_kv_cache import UnsupportedLayoutError

if TYPE_CHECKING:  # attention_hook imports this module
    from hkv.runtime.live.attention_hook import LayerBinding, PagedStep

# What a transformers module must have for `latent_paged_attention` (DeepseekV2/V3Attention,
# KimiLinearAttention and the families built on them).
LATENT_ATTRIBUTES = ("kv_b_proj", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def is_latent_attention(module: torch.nn.Module) -> bool:
    return all(hasattr(module, name) for name in LATENT_ATTRIBUTES)


class LatentCacheWriter:
    """The `cache` an MLA module's forward gets during one of hkv's steps: `update` writes the
    step's latents into the layer's pages; nothing is read back through it."""

    def __init__(self, step: PagedStep) -> None:
        self.step = step

    def update(self, kv_nope: torch.Tensor, k_rot: torch.Tensor, layer_idx: int,
               *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """kv_nope [1, 1, T, kv_lora_rank], k_rot [1, 1, T, qk_rope_head_dim] -> the same two."""
        binding = self.step.bindings[layer_idx]
        assert binding.is_mla and binding.stores, f"layer {layer_idx}: not a latent layer that stores"
        latent = torch.cat((kv_nope[0, 0], k_rot[0, 0]), dim=-1)[:, None]  # [T, 1, latent_dim]
        # key and value cache are one view (the latent): the store writes the same rows twice
        store_kv_cache(latent, latent, binding.key_cache, binding.value_cache,
                       self.step.slot_mappings[binding.group_id],
                       memo=self.step.memos.setdefault(binding.group_id, {}), backend=self.step.backend)
        return kv_nope, k_rot


def bind_latent_attention(module: torch.nn.Module) -> None:
    """Make `module` (an MLA attention module) cache through a LatentCacheWriter of the step its
    caller passes as `hkv_step=`; idempotent. UnsupportedLayoutError for a module that is not
    one (see LATENT_ATTRIBUTES)."""
    layer_idx = int(module.layer_idx)  # type: ignore[arg-type]
    if not is_latent_attention(module):
        missing = [name for name in LATENT_ATTRIBUTES if not hasattr(module, name)]
        raise UnsupportedLayoutError(f"layer {layer_idx}: the plan keeps an MLA latent, but "
                                     f"{type(module).__name__} has no {', '.join(missing)}")
    original = getattr(module, "_hkv_original_forward", module.forward)
    module._hkv_original_forward = original  # type: ignore[assignment]

    def forward(*args: Any, **kwargs: Any) -> Any:
        step = kwargs.get("hkv_step")
        if step is None:
            raise RuntimeError(f"layer {layer_idx}: MLA attention called without hkv_step "
                               "(run the model through hkv's ModelRunner)")
        kwargs.pop("past_key_values", None)  # the deprecated name of `cache`
        return original(*args, **{**kwargs, "cache": LatentCacheWriter(step)})

    module.forward = forward  # type: ignore[method-assign]


def latent_paged_attention(module: torch.nn.Module, query: torch.Tensor, binding: LayerBinding,
                           step: PagedStep, params: AttentionParams) -> torch.Tensor:
    """query [1, H, T, qk_nope_head_dim + qk_rope_head_dim] (rope applied) -> [1, T, H, v_head_dim]."""
    rank = int(module.kv_lora_rank)  # type: ignore[arg-type]
    nope = int(module.qk_nope_head_dim)  # type: ignore[arg-type]
    heads = query.shape[1]
    weight = module.kv_b_proj.weight.view(heads, -1, rank)  # type: ignore[union-attr, operator]
    w_uk, w_uv = weight[:, :nope], weight[:, nope:]  # [H, nope, rank], [H, v_head_dim, rank]
    q = query[0]  # [H, T, nope + rope]
    q_latent = torch.einsum("htn,hnr->thr", q[..., :nope], w_uk)
    q_full = torch.cat((q_latent, q[..., nope:].transpose(0, 1)), dim=-1)  # [T, H, rank + rope]
    # the value is the whole latent (the kernels take V of K's shape); its rope columns are dropped
    out = paged_attention_forward(
        q_full, binding.key_cache, binding.value_cache, step.block_tables[binding.group_id],
        step.query_start_loc, step.seq_lens, params, max_query_len=step.max_query_len,
        memo=step.memos.setdefault(binding.group_id, {}), backend=step.backend,
    )
    return torch.einsum("thr,hvr->thv", out[..., :rank], w_uv)[None]
