"""Parameter counts of attention-only families (dense and MoE); each mirrors its transformers module tree."""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.param_count_common import (
    Kinds, decoder_total, deepseek_moe, dense_mlp, gqa, hidden, mla, norms, qwen_sparse_layers,
)


def llama(view: ConfigView, kinds: Kinds) -> int:
    mlp_bias = bool(view.value("mlp_bias", False))
    layer = gqa(view) + dense_mlp(view, bias=mlp_bias) + norms(view, 2)
    return decoder_total(view, [layer] * len(kinds))


def mistral(view: ConfigView, kinds: Kinds) -> int:
    layer = gqa(view, qkv_bias=False, o_bias=False) + dense_mlp(view) + norms(view, 2)
    return decoder_total(view, [layer] * len(kinds))


def qwen3(view: ConfigView, kinds: Kinds) -> int:
    layer = gqa(view, qk_norm=True) + dense_mlp(view) + norms(view, 2)
    return decoder_total(view, [layer] * len(kinds))


def qwen2(view: ConfigView, kinds: Kinds) -> int:
    # Qwen2 hard-codes bias on q/k/v (not o), whatever attention_bias says.
    layer = gqa(view, qkv_bias=True, o_bias=False) + dense_mlp(view) + norms(view, 2)
    return decoder_total(view, [layer] * len(kinds))


def _qwen_moe(view: ConfigView, kinds: Kinds, attention: int, *, shared_expert: bool) -> int:
    h, experts = hidden(view), view.int_value("num_experts")
    moe = pb.linear(h, experts) + pb.routed_experts(experts, h, view.int_value("moe_intermediate_size"))
    if shared_expert:  # Qwen2-MoE: one gated shared expert behind a sigmoid gate
        moe += dense_mlp(view, "shared_expert_intermediate_size") + pb.linear(h, 1)
    sparse = qwen_sparse_layers(view, len(kinds))
    return decoder_total(view, [attention + (moe if i in sparse else dense_mlp(view)) + norms(view, 2)
                                for i in range(len(kinds))])


def qwen3_moe(view: ConfigView, kinds: Kinds) -> int:
    return _qwen_moe(view, kinds, gqa(view, qk_norm=True), shared_expert=False)


def qwen2_moe(view: ConfigView, kinds: Kinds) -> int:
    qkv_bias = bool(view.value("qkv_bias"))
    return _qwen_moe(view, kinds, gqa(view, qkv_bias=qkv_bias, o_bias=False), shared_expert=True)


def gemma2(view: ConfigView, kinds: Kinds) -> int:
    # Gemma 2 wraps both the attention and the MLP in pre- and post-norms: four per layer.
    layer = gqa(view) + dense_mlp(view) + norms(view, 4)
    return decoder_total(view, [layer] * len(kinds))


def gemma3(view: ConfigView, kinds: Kinds) -> int:
    layer = gqa(view, qk_norm=True) + dense_mlp(view) + norms(view, 4)
    return decoder_total(view, [layer] * len(kinds))


def cohere2(view: ConfigView, kinds: Kinds) -> int:
    # Parallel block: one input LayerNorm (weight only) feeds attention and MLP.
    layer = gqa(view) + dense_mlp(view) + norms(view, 1)
    return decoder_total(view, [layer] * len(kinds))


def gpt_oss(view: ConfigView, kinds: Kinds) -> int:
    h, experts, size = hidden(view), view.int_value("num_local_experts"), view.int_value("intermediate_size")
    sinks = view.int_value("num_attention_heads")  # one learned sink logit per query head
    moe = pb.linear(h, experts, bias=True) + pb.routed_experts(experts, h, size, bias=True)
    layer = gqa(view) + sinks + moe + norms(view, 2)
    return decoder_total(view, [layer] * len(kinds))


def llama4_moe_layers(view: ConfigView, num_layers: int) -> set[int]:
    """`moe_layers`, else every `interleave_moe_layer_step`-th layer (Llama4TextConfig default)."""
    explicit = view.get("moe_layers")
    if explicit is not None:
        return set(explicit)
    step = view.int_value("interleave_moe_layer_step")
    return set(range(step - 1, num_layers, step))


def llama4(view: ConfigView, kinds: Kinds) -> int:
    h, experts, size = hidden(view), view.int_value("num_local_experts"), view.int_value("intermediate_size")
    moe = pb.linear(h, experts) + pb.routed_experts(experts, h, size) + pb.gated_mlp(h, size)  # + shared
    dense = dense_mlp(view, "intermediate_size_mlp")
    moe_layers = llama4_moe_layers(view, len(kinds))
    # use_qk_norm is a weightless L2 norm in Llama 4, so it adds no parameters.
    per_layer = [gqa(view) + (moe if i in moe_layers else dense) + norms(view, 2) for i in range(len(kinds))]
    return decoder_total(view, per_layer)


def _dense_layers(view: ConfigView, kinds: Kinds) -> list[bool]:
    """Dense MLP in the first `first_k_dense_replace` layers, MoE after; or per layer as
    `mlp_layer_types` ("dense" / "sparse") says where the config lists it (GLM-4 MoE lite, AXK1)."""
    types = view.get("mlp_layer_types") if view.get("first_k_dense_replace") is None else None
    if isinstance(types, list) and len(types) == len(kinds):
        return [t == "dense" for t in types]
    first_dense = view.int_value("first_k_dense_replace")
    return [i < first_dense for i in range(len(kinds))]


def _first_k_dense(view: ConfigView, kinds: Kinds, attention: int, *, shared_key: str) -> list[int]:
    moe = deepseek_moe(view, experts_key="n_routed_experts", shared_key=shared_key)
    return [attention + (dense_mlp(view) if is_dense else moe) + norms(view, 2)
            for is_dense in _dense_layers(view, kinds)]


def deepseek_v3(view: ConfigView, kinds: Kinds) -> int:
    return decoder_total(view, _first_k_dense(view, kinds, mla(view), shared_key="n_shared_experts"))


def axk1(view: ConfigView, kinds: Kinds) -> int:
    """DeepSeek-V3's decoder plus a hidden-sized post_mlp_layernorm after every MoE block."""
    moe_layers = sum(not dense for dense in _dense_layers(view, kinds))
    return deepseek_v3(view, kinds) + norms(view, moe_layers)


def minicpm3(view: ConfigView, kinds: Kinds) -> int:
    """MiniCPM3: DeepSeek-V2's MLA projections with a dense gated MLP in every layer."""
    return decoder_total(view, [mla(view) + dense_mlp(view) + norms(view, 2)] * len(kinds))


def glm4_moe(view: ConfigView, kinds: Kinds) -> int:
    attention = gqa(view, o_bias=False, qk_norm=bool(view.value("use_qk_norm")))
    return decoder_total(view, _first_k_dense(view, kinds, attention, shared_key="n_shared_experts"))
