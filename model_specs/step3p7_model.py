"""Step-3.5-Flash / Step-3.7-Flash language model (model_type step3p5; step3p7 for Step-3.7's
multimodal wrapper, whose text_config is step3p5): its layers, caches and weights, as vLLM 0.32 builds
them (model_executor/models/step3p5.py; step3p7.py wraps it with the vision tower) and as
transformers 5.24 does (models/step3p7, Step3p7TextModel).

Layers: `layer_types` per layer, full or sliding (window `sliding_window`); the published config lists
num_hidden_layers + num_nextn_predict_layers entries (the MTP layers' last), the decoder takes the
first num_hidden_layers. Every layer caches `num_attention_groups` (transformers and flattened copies:
`num_key_value_heads`) K/V heads of `head_dim`; `attention_other_setting` may give sliding layers
other query heads (Step-3.7: 96 against 64), and hkv refuses one that changes their KV heads or head
size (one K/V geometry is all this rule plans).

Weights per layer: self_attn q/k/v/o (the layer's heads, no bias unless attention_bias), q_norm and
k_norm (head_dim each), g_proj (hidden -> query heads: the head-wise output gate, built when
use_head_wise_attn_gate is set; transformers always builds it); two RMSNorms. The FFN is MoE on the
layers moe_layers_enum lists (transformers: mlp_layer_types "sparse"; flattened copies:
first_k_dense_replace dense layers first; none of these: vLLM's default, every layer but the first):
moe.gate (hidden -> moe_num_experts, fp32 in vLLM), moe_num_experts gated experts of
moe_intermediate_size, and moe.share_expert, a gated MLP of share_expert_dim; other layers a dense
gated MLP of intermediate_size. Not counted: moe.router_bias (moe_num_experts fp32 per MoE layer: a
parameter in vLLM, a buffer in transformers) and the MTP layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hkv.model_specs import param_breakdown_blocks as blk
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.family_sets import STEP3P7_FAMILIES as STEP3P7_FAMILIES
from hkv.model_specs.layer_kinds import LayerKind, LayerTypeList
from hkv.model_specs.param_breakdown import LinearWeight, Part
from hkv.model_specs.param_breakdown_blocks import Weights, weights_numel
from hkv.model_specs.param_count_common import Kinds, decoder_total, hidden

LM: Part = "language_model"
_KINDS = ("full_attention", "sliding_attention")


def step3p7_layer_types(view: ConfigView, n: int) -> LayerTypeList:
    """layer_types, less the trailing MTP entries; every layer full attention when absent (the config
    classes' default)."""
    names = view.get("layer_types")
    if names is None:
        return LayerTypeList("layer_types", ("full_attention",) * n)
    mtp = view.int_value("num_nextn_predict_layers", 0)
    if isinstance(names, list) and mtp and len(names) == n + mtp:
        names = names[:n]
    if not isinstance(names, list) or len(names) != n or any(name not in _KINDS for name in names):
        raise InvalidConfigError(f"layer_types must list {n} entries (or {n} + num_nextn_predict_layers) of "
                                 f"{' / '.join(_KINDS)}, got {names!r}")
    full, sliding = _geometry(view, False), _geometry(view, True)
    if "sliding_attention" in names and full[1:] != sliding[1:]:
        raise InvalidConfigError(f"attention_other_setting gives sliding layers {sliding[1]} KV heads of "
                                 f"{sliding[2]}, full layers have {full[1]} of {full[2]}: hkv plans one K/V "
                                 "geometry for model_type step3p5 / step3p7")
    return LayerTypeList("layer_types", tuple(names))


def kv_heads(view: ConfigView) -> int:
    groups = view.get("num_attention_groups")
    return int(groups) if groups is not None else view.int_value("num_key_value_heads")


def _other_setting(view: ConfigView) -> Mapping[str, Any]:
    other = view.get("attention_other_setting") or {}
    return other if other.get("attention_type", "sliding_attention") == "sliding_attention" else {}


def _geometry(view: ConfigView, sliding: bool) -> tuple[int, int, int]:
    """(query heads, KV heads, head size) of a full or sliding layer."""
    heads, groups, head_dim = view.int_value("num_attention_heads"), kv_heads(view), view.int_value("head_dim")
    if not sliding:
        return heads, groups, head_dim
    other = _other_setting(view)
    swa_heads = other.get("num_attention_heads") or view.get("num_sliding_attention_heads") or heads
    return int(swa_heads), int(other.get("num_attention_groups") or groups), int(other.get("head_dim") or head_dim)


def moe_layers(view: ConfigView, n: int) -> set[int]:
    listed = view.get("moe_layers_enum")
    if listed is not None:
        items = listed.split(",") if isinstance(listed, str) else listed
        return {int(i) for i in items if str(i).strip()} & set(range(n))
    types = view.get("mlp_layer_types")
    if isinstance(types, list):
        return {i for i in range(n) if types[i] == "sparse"}
    if view.has("first_k_dense_replace"):
        return set(range(view.int_value("first_k_dense_replace"), n))
    view.note("moe_layers_enum absent: every layer but the first is MoE (vLLM's step3p5.py default)")
    return set(range(1, n))


def num_experts(view: ConfigView) -> int:
    for key in ("moe_num_experts", "n_routed_experts", "num_experts"):
        if view.has(key):
            return view.int_value(key)
    raise InvalidConfigError("model_type step3p5 / step3p7 needs moe_num_experts (or n_routed_experts)")


def step3p7_layer(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    heads, groups, head_dim = _geometry(view, LayerKind.SLIDING in kinds[i])
    h, a, bias = hidden(view), p + "self_attn.", bool(view.value("attention_bias", False))
    out: Weights = blk.attention(p, i, LM, hidden=h, q_heads=heads, kv_heads=groups, head_dim=head_dim,
                                 qkv_bias=bias, o_bias=bias, qk_norm=True)
    if view.value("use_head_wise_attn_gate", False):
        out.append(LinearWeight(a + "g_proj", h, heads, LM, i, "column"))
    if i in moe_layers(view, len(kinds)):
        out += blk.routed_experts(p, i, LM, num_experts=num_experts(view), hidden=h,
                                  intermediate=view.int_value("moe_intermediate_size"), name="moe")
        out += blk.gated_mlp(p, i, LM, hidden=h, intermediate=view.int_value("share_expert_dim"),
                             name="moe.share_expert")
    else:
        out += blk.gated_mlp(p, i, LM, hidden=h, intermediate=view.int_value("intermediate_size"))
    return out + blk.norms(p, i, LM, ("input_layernorm", "post_attention_layernorm"), h)


def step3p7(view: ConfigView, kinds: Kinds) -> int:
    if not view.has("use_head_wise_attn_gate"):
        view.note("use_head_wise_attn_gate absent: no g_proj, as vLLM's step3p5.py reads it "
                  "(the released Step-3.5/3.7-Flash configs set it)")
    return decoder_total(view, (weights_numel(step3p7_layer(view, kinds, i, "")) for i in range(len(kinds))))
