"""Weights of MiMo-V2-Flash (model_type mimo_v2_flash, MiMoV2FlashForCausalLM), as vLLM 0.32 builds
them (model_executor/models/mimo_v2.py); transformers 5.24's MiMoV2FlashForCausalLM holds the same
parameters. Which layers are sliding, and their geometry, come from mimo_v2_layers.py.

Per layer: self_attn q/k/v/o (qkv bias per attention_bias, o_proj never), with K of head_dim and V
of v_head_dim per KV head, O from heads x v_head_dim; a sliding layer uses swa_num_attention_heads /
swa_num_key_value_heads / swa_head_dim / swa_v_head_dim and, when add_swa_attention_sink_bias (the
transformers form without the key: always), one sink per query head (split with the heads). vLLM
builds no sink on full layers (add_full_attention_sink_bias is never read). The MLP is MoE where
moe_layer_freq[i] is set (transformers: mlp_layer_types "sparse"): gate (hidden -> n_routed_experts,
fp32 in vLLM, no bias) + n_routed_experts gated experts of moe_intermediate_size, no shared expert;
else a dense gated MLP of intermediate_size. Two RMSNorms. Not counted: the router's
e_score_correction_bias (a parameter in vLLM, a buffer in transformers) and the MTP layers (vLLM's
loader skips every "mtp" weight).
"""

from __future__ import annotations

from hkv.model_specs import param_breakdown_blocks as blk
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.layer_kinds import LayerKind
from hkv.model_specs.param_breakdown import DenseWeight, LinearWeight, Part
from hkv.model_specs.param_breakdown_blocks import Weights, weights_numel
from hkv.model_specs.param_count_common import Kinds, decoder_total, hidden

LM: Part = "language_model"


def _attention_geometry(view: ConfigView, sliding: bool) -> tuple[int, int, int, int]:
    """(query heads, KV heads, key head size, value head size) of a sliding or full layer."""
    heads = view.int_value("num_attention_heads")
    kv_heads = view.int_value("num_key_value_heads")
    key = view.int_value("head_dim")
    value = view.int_value("v_head_dim", key)
    if not sliding:
        return heads, kv_heads, key, value
    swa_kv = view.int_value("swa_num_key_value_heads") if view.has("swa_num_key_value_heads") else 2 * kv_heads
    swa_key = view.int_value("swa_head_dim", key)
    return (view.int_value("swa_num_attention_heads", heads), swa_kv, swa_key,
            view.int_value("swa_v_head_dim", value if not view.has("swa_head_dim") else swa_key))


def moe_layers(view: ConfigView, num_layers: int) -> set[int]:
    """vLLM's is_moe_layer: moe_layer_freq[i] when it is a list (an int makes every layer dense);
    transformers' form lists mlp_layer_types instead."""
    freq = view.get("moe_layer_freq")
    if isinstance(freq, list):
        return {i for i in range(num_layers) if freq[i]}
    types = view.get("mlp_layer_types")
    if isinstance(types, list):
        return {i for i in range(num_layers) if types[i] == "sparse"}
    return set()


def _sinks_on_sliding(view: ConfigView) -> bool:
    # vLLM reads add_swa_attention_sink_bias (default off); transformers' form always has SWA sinks.
    return bool(view.value("add_swa_attention_sink_bias", not view.has("hybrid_layer_pattern")))


def mimo_v2_layer(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    sliding = LayerKind.SLIDING in kinds[i]
    heads, kv_heads, key, value = _attention_geometry(view, sliding)
    h, a, bias = hidden(view), p + "self_attn.", bool(view.value("attention_bias", False))
    out: Weights = [
        LinearWeight(a + "q_proj", h, heads * key, LM, i, "column", bias=bias),
        LinearWeight(a + "k_proj", h, kv_heads * key, LM, i, "column", bias=bias, kv_heads=kv_heads),
        LinearWeight(a + "v_proj", h, kv_heads * value, LM, i, "column", bias=bias, kv_heads=kv_heads),
        LinearWeight(a + "o_proj", heads * value, h, LM, i, "row"),
    ]
    if sliding and _sinks_on_sliding(view):
        out.append(DenseWeight(a + "attention_sink_bias", heads, LM, i, "sharded"))
    if i in moe_layers(view, len(kinds)):
        out += blk.routed_experts(p, i, LM, num_experts=view.int_value("n_routed_experts"), hidden=h,
                                  intermediate=view.int_value("moe_intermediate_size"))
    else:
        out += blk.gated_mlp(p, i, LM, hidden=h, intermediate=view.int_value("intermediate_size"))
    return out + blk.norms(p, i, LM, ("input_layernorm", "post_attention_layernorm"), h)


def mimo_v2(view: ConfigView, kinds: Kinds) -> int:
    return decoder_total(view, (weights_numel(mimo_v2_layer(view, kinds, i, "")) for i in range(len(kinds))))
