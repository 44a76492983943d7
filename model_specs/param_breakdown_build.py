"""The ParamBreakdown of a config: decoder weights by family, vision towers (param_breakdown_towers.py),
audio towers (param_breakdown_audio.py), MTP.

Families with a builder here list every weight; the total of their language-model part equals
`count_params` (the analytic count tests check against transformers). Other families get a
stand-in (`exact=False`): embeddings, lm_head and final norm as they are, the rest of
`count_params` as one hidden-wide linear per layer, so quantized formats still apply to it.
Buffers: the rotary cos/sin cache vLLM builds at load (max_position_embeddings x rotary dims in
the model dtype; vllm/model_executor/layers/rotary_embedding/base.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast

from hkv.model_specs import param_breakdown_blocks as blk
from hkv.model_specs.attention_dims import model_head_dim, num_kv_heads, num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.family_sets import STEP3P7_FAMILIES
from hkv.model_specs.lazy_import import resolve
from hkv.model_specs.param_breakdown import EMBED_LAYER, HEAD_LAYER, DenseWeight, LinearWeight, ParamBreakdown, Part
from hkv.model_specs.param_breakdown_blocks import Weights
from hkv.model_specs.param_breakdown_towers import tower_weights
from hkv.model_specs.param_count_common import Kinds, is_attention, is_tied, qwen_sparse_layers

LM: Part = "language_model"
# Checkpoint prefix of the decoder layers, by architecture of multimodal wrappers (HF names).
_WRAPPER_PREFIX = {
    "Qwen3_5ForConditionalGeneration": "model.language_model.",
    "Qwen3_5MoeForConditionalGeneration": "model.language_model.",
    "Gemma3ForConditionalGeneration": "language_model.model.",
    "Mistral3ForConditionalGeneration": "language_model.model.",
    "Gemma4ForConditionalGeneration": "model.language_model.",
    "Step3p7ForConditionalGeneration": "model.language_model.",
}


def _attn(view: ConfigView, prefix: str, layer: int, **kw) -> Weights:
    return blk.attention(
        prefix,
        layer,
        LM,
        hidden=view.int_value("hidden_size"),
        q_heads=num_query_heads(view),
        kv_heads=num_kv_heads(view),
        head_dim=model_head_dim(view),
        **kw,
    )


def _mlp(
    view: ConfigView, prefix: str, layer: int, size_key: str = "intermediate_size", bias: bool = False
) -> Weights:
    return blk.gated_mlp(
        prefix,
        layer,
        LM,
        hidden=view.int_value("hidden_size"),
        intermediate=view.int_value(size_key),
        bias=bias,
    )


def _norms(view: ConfigView, prefix: str, layer: int, names: tuple[str, ...]) -> Weights:
    return blk.norms(prefix, layer, LM, names, view.int_value("hidden_size"))


_TWO_NORMS = ("input_layernorm", "post_attention_layernorm")
_FOUR_NORMS = (*_TWO_NORMS, "pre_feedforward_layernorm", "post_feedforward_layernorm")

LayerBuilder = Callable[[ConfigView, Kinds, int, str], Weights]


def _llama(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    bias = bool(view.value("attention_bias", False))
    return (
        _attn(view, p, i, qkv_bias=bias, o_bias=bias)
        + _mlp(view, p, i, bias=bool(view.value("mlp_bias", False)))
        + _norms(view, p, i, _TWO_NORMS)
    )


def _mistral(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    return _attn(view, p, i) + _mlp(view, p, i) + _norms(view, p, i, _TWO_NORMS)


def _qwen2(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    return _attn(view, p, i, qkv_bias=True) + _mlp(view, p, i) + _norms(view, p, i, _TWO_NORMS)


def _qwen3(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    return _attn(view, p, i, qk_norm=True) + _mlp(view, p, i) + _norms(view, p, i, _TWO_NORMS)


def _gemma2(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    bias = bool(view.value("attention_bias", False))
    return _attn(view, p, i, qkv_bias=bias, o_bias=bias) + _mlp(view, p, i) + _norms(view, p, i, _FOUR_NORMS)


def _gemma3(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    bias = bool(view.value("attention_bias", False))
    return (
        _attn(view, p, i, qkv_bias=bias, o_bias=bias, qk_norm=True)
        + _mlp(view, p, i)
        + _norms(view, p, i, _FOUR_NORMS)
    )


def _cohere2(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    bias = bool(view.value("attention_bias", False))
    return (
        _attn(view, p, i, qkv_bias=bias, o_bias=bias)
        + _mlp(view, p, i)
        + _norms(view, p, i, ("input_layernorm",))
    )


def _moe(
    view: ConfigView,
    p: str,
    i: int,
    experts_key: str,
    size_key: str,
    *,
    bias: bool = False,
    router_name: str = "gate",
) -> Weights:
    return blk.routed_experts(
        p,
        i,
        LM,
        num_experts=view.int_value(experts_key),
        hidden=view.int_value("hidden_size"),
        intermediate=view.int_value(size_key),
        bias=bias,
        router_bias=bias,
        router_name=router_name,
    )


def _gpt_oss(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    bias = bool(view.value("attention_bias", False))
    return (
        _attn(view, p, i, qkv_bias=bias, o_bias=bias, sinks=True)
        + _moe(view, p, i, "num_local_experts", "intermediate_size", bias=True, router_name="router")
        + _norms(view, p, i, _TWO_NORMS)
    )


def _qwen_moe_mlp(view: ConfigView, kinds: Kinds, i: int, p: str, *, shared: bool) -> Weights:
    if i not in qwen_sparse_layers(view, len(kinds)):
        return _mlp(view, p, i)
    out = _moe(view, p, i, "num_experts", "moe_intermediate_size")
    if shared:
        out += blk.shared_expert(
            p,
            i,
            LM,
            hidden=view.int_value("hidden_size"),
            intermediate=view.int_value("shared_expert_intermediate_size"),
        )
    return out


def _qwen3_moe(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    return (
        _attn(view, p, i, qk_norm=True)
        + _qwen_moe_mlp(view, kinds, i, p, shared=False)
        + _norms(view, p, i, _TWO_NORMS)
    )


def _qwen2_moe(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    return (
        _attn(view, p, i, qkv_bias=bool(view.value("qkv_bias")))
        + _qwen_moe_mlp(view, kinds, i, p, shared=True)
        + _norms(view, p, i, _TWO_NORMS)
    )


def _gdn(view: ConfigView, p: str, i: int) -> Weights:
    return blk.gated_delta_net(
        p,
        i,
        LM,
        hidden=view.int_value("hidden_size"),
        k_heads=view.int_value("linear_num_key_heads"),
        v_heads=view.int_value("linear_num_value_heads"),
        k_head_dim=view.int_value("linear_key_head_dim"),
        v_head_dim=view.int_value("linear_value_head_dim"),
        conv_kernel=view.int_value("linear_conv_kernel_dim"),
        split_names=view.family != "qwen3_next",
    )


def _qwen3_next(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    mixer = _attn(view, p, i, qk_norm=True, q_gate=True) if is_attention(kinds[i]) else _gdn(view, p, i)
    has_experts = view.int_value("num_experts", 0) > 0
    ffn = _qwen_moe_mlp(view, kinds, i, p, shared=True) if has_experts else _mlp(view, p, i)
    return mixer + ffn + _norms(view, p, i, _TWO_NORMS)


_M = "hkv.model_specs."
# A builder, or the "module:function" of one whose module loads only when planned (lazy_import.py).
LAYER_BUILDERS: dict[str, LayerBuilder | str] = {
    "llama": _llama,
    "mistral": _mistral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "qwen2_moe": _qwen2_moe,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3,
    "cohere2": _cohere2,
    "gpt_oss": _gpt_oss,
    "qwen3_next": _qwen3_next,
    "qwen3_5_text": _qwen3_next,
    "qwen3_5_moe_text": _qwen3_next,
    "deepseek_v4": _M + "param_breakdown_deepseek_v4:deepseek_v4_layer",
    "gemma4_text": _M + "param_breakdown_gemma4:gemma4_layer",
    "minimax_m2": _M + "param_count_minimax_m2:minimax_m2_layer",
    "mimo_v2_flash": _M + "param_count_mimo_v2:mimo_v2_layer",
    **{family: _M + "step3p7_model:step3p7_layer" for family in STEP3P7_FAMILIES},
}


def _layer_prefix(config_architectures: tuple[str, ...]) -> str:
    wrapper = next((_WRAPPER_PREFIX[a] for a in config_architectures if a in _WRAPPER_PREFIX), "model.")
    return wrapper + "layers."


def _embeddings(view: ConfigView, prefix: str) -> Weights:
    """Input embeddings (first stage), final norm and lm_head (last stage; the embeddings when tied)."""
    vocab, hidden = view.int_value("vocab_size"), view.int_value("hidden_size")
    base = prefix[: -len("layers.")]
    out: Weights = [
        DenseWeight(base + "embed_tokens", vocab * hidden, LM, EMBED_LAYER, "vocab", rows=vocab),
        DenseWeight(base + "norm", hidden, LM, HEAD_LAYER),
    ]
    if not is_tied(view):
        head = "language_model.lm_head" if base == "language_model.model." else "lm_head"
        out.append(LinearWeight(head, hidden, vocab, LM, HEAD_LAYER, "column", role="lm_head"))
    return out


def _mtp(view: ConfigView, kinds: Kinds, builder: LayerBuilder) -> Weights:
    """Qwen3-Next / Qwen3.5 MTP block: fc (2 x hidden -> hidden), its two input norms, a final norm
    and `mtp_num_hidden_layers` full-attention decoder layers (embeddings shared with the model)."""
    num_mtp = (
        view.int_value("mtp_num_hidden_layers", 0) if view.family.startswith(("qwen3_next", "qwen3_5")) else 0
    )
    if not num_mtp:
        return []
    hidden = view.int_value("hidden_size")
    full = next((k for k in kinds if is_attention(k)), kinds[-1])
    mtp_kinds = (*kinds, *([full] * num_mtp))
    out: Weights = [
        LinearWeight("mtp.fc", 2 * hidden, hidden, "mtp", HEAD_LAYER, "column"),
        *blk.norms(
            "mtp.", HEAD_LAYER, "mtp", ("pre_fc_norm_hidden", "pre_fc_norm_embedding", "norm"), hidden
        ),
    ]
    for j in range(num_mtp):
        layer = builder(view, mtp_kinds, len(kinds) + j, f"mtp.layers.{j}.")
        out += [_as_mtp(w) for w in layer]
    return out


def _as_mtp(w: LinearWeight | DenseWeight) -> LinearWeight | DenseWeight:
    return replace(w, part="mtp", layer=HEAD_LAYER)


def _stand_in(view: ConfigView, kinds: Kinds, num_params: int, prefix: str) -> Weights:
    """Unknown family: what count_params leaves after embeddings, lm_head and norm, spread as one
    hidden-wide linear per layer (exactness is lost, the total is kept)."""
    head = _embeddings(view, prefix)
    hidden = view.int_value("hidden_size")
    rest = num_params - sum(w.numel if isinstance(w, DenseWeight) else w.num_params for w in head)
    per_layer, remainder = divmod(rest, max(1, len(kinds)))
    out: Weights = list(head)
    for i in range(len(kinds)):
        out.append(LinearWeight(f"{prefix}{i}.stand_in", hidden, per_layer // hidden, LM, i, "column"))
        out.append(DenseWeight(f"{prefix}{i}.stand_in_rest", per_layer % hidden, LM, i))
    out.append(DenseWeight(prefix + "remainder", remainder, LM, HEAD_LAYER))
    return out


# Rope types whose vLLM cache spans max_position_embeddings x factor positions
# (vllm/model_executor/layers/rotary_embedding: linear, YaRN, dynamic NTK, DeepSeek YaRN).
_SCALED_ROPE_TYPES = ("linear", "yarn", "dynamic", "deepseek_yarn")


def _rope_entries(view: ConfigView) -> list[dict]:
    """One rope config per distinct rotary embedding vLLM builds (get_rope caches equal ones)."""
    rope = view.get("rope_parameters") or view.get("rope_scaling") or {}
    if not isinstance(rope, dict):
        return [{}]
    nested = [v for v in rope.values() if isinstance(v, dict)]
    entries = nested if nested and all(isinstance(v, dict) for v in rope.values()) else [rope]
    if view.has("rope_local_base_freq") and not nested:  # Gemma 3: an unscaled local rope as well
        entries.append({})
    return entries


def _rotary_buffer(view: ConfigView) -> tuple[DenseWeight, ...]:
    """vLLM's cos/sin caches: positions x rotary_dim elements each, in the model dtype
    (rotary_embedding/base.py); positions = max_position_embeddings, times the factor for linear
    and dynamic scaling; YaRN: original_max_position_embeddings x factor."""
    if not view.has("max_position_embeddings") or not view.has("num_attention_heads"):
        return ()
    out = []
    for k, rope in enumerate(_rope_entries(view)):
        factor = float(rope.get("partial_rotary_factor", view.get("partial_rotary_factor") or 1.0))
        rotary_dim = int(model_head_dim(view) * factor)
        kind = rope.get("rope_type", rope.get("type"))
        scale = float(rope.get("factor", 1.0)) if kind in _SCALED_ROPE_TYPES else 1.0
        # YaRN builds its cache over the original context times the factor (get_rope passes it).
        base = rope.get("original_max_position_embeddings") if kind in ("yarn", "deepseek_yarn") else None
        positions = int((int(base) if base else view.int_value("max_position_embeddings")) * scale)
        out.append(DenseWeight(f"rotary_emb.{k}.cos_sin_cache", positions * rotary_dim, LM))
    return tuple(out)


def _no_model_wide(view: ConfigView, kinds: Kinds, prefix: str) -> Weights:
    return []


ModelWideBuilder = Callable[[ConfigView, Kinds, str], Weights]
MtpBuilder = Callable[[ConfigView, Kinds, LayerBuilder], Weights]
RotaryBuilder = Callable[[ConfigView], tuple[DenseWeight, ...]]
TokenBufferBuilder = Callable[[ConfigView, Kinds], tuple[DenseWeight, ...]]
# The tables below name each family's builder "module:function" (lazy_import.py).
# Families with model-wide weights beyond embeddings / norm / lm_head (Gemma 4's per-layer inputs).
MODEL_WIDE_BUILDERS: dict[str, str] = {"gemma4_text": _M + "param_breakdown_gemma4:gemma4_model_wide"}
# Families whose MTP block or rotary caches are their own (default: _mtp, _rotary_buffer).
MTP_BUILDERS: dict[str, str] = {"deepseek_v4": _M + "param_breakdown_deepseek_v4:deepseek_v4_mtp"}
ROTARY_BUILDERS: dict[str, str] = {
    "deepseek_v4": _M + "param_breakdown_deepseek_v4:deepseek_v4_rotary",
    "gemma4_text": _M + "param_breakdown_gemma4:gemma4_rotary",
}
def _no_token_buffers(view: ConfigView, kinds: Kinds) -> tuple[DenseWeight, ...]:
    return ()


# Families allocating buffers per scheduled token while loading (numel per token).
TOKEN_BUFFER_BUILDERS: dict[str, str] = {
    "gemma4_text": _M + "param_breakdown_gemma4:gemma4_token_buffers",
}


def build_breakdown(
    view: ConfigView, kinds: Kinds, config: Mapping[str, Any], num_params: int, architectures: tuple[str, ...]
) -> ParamBreakdown:
    """The breakdown of the model `view` describes (its language model's analytic count `num_params`)."""
    prefix = _layer_prefix(architectures)
    family = view.family
    entry = LAYER_BUILDERS.get(family)
    builder = cast(LayerBuilder, resolve(entry)) if isinstance(entry, str) else entry
    if builder is None:
        weights = _stand_in(view, kinds, num_params, prefix)
    else:
        weights = _embeddings(view, prefix)
        for i in range(len(kinds)):
            weights += builder(view, kinds, i, f"{prefix}{i}.")
        model_wide = cast(ModelWideBuilder, resolve(MODEL_WIDE_BUILDERS[family])) \
            if family in MODEL_WIDE_BUILDERS else _no_model_wide
        weights += model_wide(view, kinds, prefix)
        mtp = cast(MtpBuilder, resolve(MTP_BUILDERS[family])) if family in MTP_BUILDERS else _mtp
        weights += mtp(view, kinds, builder)
    weights += tower_weights(config, view.int_value("hidden_size"))
    if isinstance(config.get("audio_config"), Mapping):  # audio_weights is [] without one
        from hkv.model_specs.param_breakdown_audio import audio_weights  # issue 34: cold start
        weights += audio_weights(config, view.int_value("hidden_size"))
    rotary = cast(RotaryBuilder, resolve(ROTARY_BUILDERS[family])) \
        if family in ROTARY_BUILDERS else _rotary_buffer
    token_buffers = cast(TokenBufferBuilder, resolve(TOKEN_BUFFER_BUILDERS[family])) \
        if family in TOKEN_BUFFER_BUILDERS else _no_token_buffers
    return ParamBreakdown(
        linears=tuple(w for w in weights if isinstance(w, LinearWeight)),
        dense=tuple(w for w in weights if isinstance(w, DenseWeight) and w.numel),
        buffers=rotary(view),
        token_buffers=token_buffers(view, kinds),
        num_layers=len(kinds),
        exact=builder is not None,
    )
