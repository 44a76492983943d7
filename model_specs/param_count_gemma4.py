"""Parameter count of Gemma 4's language model (Gemma4TextModel + lm_head).

Per layer: q_proj, q_norm and o_proj at the layer's own head_dim (full-attention layers use
global_head_dim); k_proj, v_proj (none on k_eq_v full layers: V reuses K), k_norm, unless the layer
reads another layer's KV; v_norm has no weight. Four norms, a gated MLP (double width on KV-shared
layers when use_double_wide_mlp), optionally an MoE block next to it (router with its own scales,
stacked experts, three more norms) and the per-layer-input gate / projection / norm. Model-wide:
the per-layer embedding table and its projection and norm when hidden_size_per_layer_input > 0.
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import num_kv_heads, num_query_heads, model_head_dim
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.kv_sharing import kv_share_targets
from hkv.model_specs.layer_kinds import LayerKind
from hkv.model_specs.param_count_common import Kinds, decoder_total, hidden, norms
from hkv.model_specs.per_layer_attention import per_layer_overrides


def _attention(view: ConfigView, head_dim: int, kv_heads: int, *, shared: bool, k_eq_v: bool) -> int:
    h, q_heads, bias = hidden(view), num_query_heads(view), bool(view.value("attention_bias", False))
    q_and_o = pb.linear(h, q_heads * head_dim, bias) + head_dim + pb.linear(q_heads * head_dim, h, bias)
    if shared:
        return q_and_o
    return q_and_o + pb.linear(h, kv_heads * head_dim, bias) * (1 if k_eq_v else 2) + head_dim


def _moe_block(view: ConfigView) -> int:
    h, experts = hidden(view), view.int_value("num_experts")
    router = pb.linear(h, experts) + h + experts  # proj + scale + per_expert_scale
    return router + pb.routed_experts(experts, h, view.int_value("moe_intermediate_size")) + norms(view, 3)


def gemma4(view: ConfigView, kinds: Kinds) -> int:
    overrides, shared = per_layer_overrides(view, kinds), kv_share_targets(view, kinds)
    h, per_layer_dim = hidden(view), view.int_value("hidden_size_per_layer_input")
    k_eq_v, double_wide = bool(view.get("attention_k_eq_v")), bool(view.get("use_double_wide_mlp"))
    moe = _moe_block(view) if view.get("enable_moe_block") else 0
    total = []
    for idx, layer in enumerate(kinds):
        override = overrides.get(idx)
        head_dim = (override and override.head_dim) or model_head_dim(view)
        kv_heads = (override and override.num_kv_heads) or num_kv_heads(view)
        is_full = LayerKind.FULL in layer
        attn = _attention(view, head_dim, kv_heads, shared=idx in shared, k_eq_v=k_eq_v and is_full)
        width = view.int_value("intermediate_size") * (2 if double_wide and idx in shared else 1)
        per_layer_input = (pb.linear(h, per_layer_dim) + pb.linear(per_layer_dim, h) + h) if per_layer_dim else 0
        total.append(attn + pb.gated_mlp(h, width) + norms(view, 4) + moe + per_layer_input)
    extra = 0
    if per_layer_dim:
        packed = len(kinds) * per_layer_dim
        extra = view.int_value("vocab_size_per_layer_input") * packed + pb.linear(h, packed) + per_layer_dim
    return decoder_total(view, total, extra=extra)
