"""Parameter counts of hybrid families (attention + recurrent mixers), mirroring transformers' modules."""

from __future__ import annotations

import math

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import model_head_dim
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.layer_kinds import LayerKind
from hkv.model_specs.layer_rules import nemotron_layer_types
from hkv.model_specs.param_count_common import (
    Kinds, decoder_total, deepseek_moe, dense_mlp, gqa, hidden, is_attention, is_tied, mla, norms,
    qwen_sparse_layers,
)
from hkv.model_specs.recurrent_dims import kda_heads_and_dims, mamba1_intermediate, mamba2_dims


def _mamba2(view: ConfigView, *, proj_bias: bool, conv_bias: bool, out_bias: bool,
            gated_norm: bool = True) -> int:
    d = mamba2_dims(view)
    return pb.mamba2_mixer(hidden(view), intermediate=d.intermediate, conv_dim=d.conv_dim, n_heads=d.n_heads,
                           conv_kernel=d.conv_kernel, proj_bias=proj_bias, conv_bias=conv_bias,
                           out_bias=out_bias, gated_norm=gated_norm)


def _bamba_style_mamba2(view: ConfigView) -> int:
    proj_bias = bool(view.value("mamba_proj_bias"))
    conv_bias = bool(view.value("mamba_conv_bias"))
    return _mamba2(view, proj_bias=proj_bias, conv_bias=conv_bias, out_bias=proj_bias)


def bamba(view: ConfigView, kinds: Kinds) -> int:
    mixer = {True: gqa(view), False: _bamba_style_mamba2(view)}
    ffn = dense_mlp(view, bias=bool(view.value("mlp_bias", False)))
    return decoder_total(view, [mixer[is_attention(k)] + ffn + norms(view, 2) for k in kinds])


def granitemoehybrid(view: ConfigView, kinds: Kinds) -> int:
    h, experts = hidden(view), view.int_value("num_local_experts")
    size, shared = view.int_value("intermediate_size"), view.int_value("shared_intermediate_size")
    moe = pb.linear(h, experts) + pb.routed_experts(experts, h, size) if experts > 0 else 0
    shared_mlp = pb.linear(h, 2 * shared) + pb.linear(shared, h)  # fused gate|up "input_linear"
    mixer = {True: gqa(view), False: _bamba_style_mamba2(view)}
    return decoder_total(view, [mixer[is_attention(k)] + moe + shared_mlp + norms(view, 2) for k in kinds])


def falcon_h1(view: ConfigView, kinds: Kinds) -> int:
    # Falcon-H1's out_proj bias follows projectors_bias, and its gated norm exists only with mamba_rms_norm.
    mamba = _mamba2(view, proj_bias=bool(view.value("mamba_proj_bias")),
                    conv_bias=bool(view.value("mamba_conv_bias")),
                    out_bias=bool(view.value("projectors_bias")),
                    gated_norm=bool(view.value("mamba_rms_norm")))
    ffn = dense_mlp(view, bias=bool(view.value("mlp_bias", False)))
    per_layer = [(gqa(view) if is_attention(k) else 0) + (mamba if LayerKind.RECURRENT in k else 0)
                 + ffn + norms(view, 2) for k in kinds]
    return decoder_total(view, per_layer)


def nemotron_h(view: ConfigView, kinds: Kinds) -> int:
    """One norm + one mixer per layer: Mamba2, attention, relu2 MLP or MoE (from the layer list)."""
    h, mlp_bias = hidden(view), bool(view.value("mlp_bias"))
    use_bias = bool(view.value("use_bias"))
    mamba = _mamba2(view, proj_bias=use_bias, conv_bias=bool(view.value("use_conv_bias")), out_bias=use_bias)
    attention = gqa(view, qkv_bias=False, o_bias=False)  # NemotronHAttention hard-codes bias=False
    mlp = pb.plain_mlp(h, view.int_value("intermediate_size"), mlp_bias)
    names = _nemotron_names(view, kinds)
    per_layer = [norms(view, 1) + {"mamba": mamba, "attention": attention, "mlp": mlp}.get(name, 0)
                 + (_nemotron_moe(view) if name == "moe" else 0) for name in names]
    return decoder_total(view, per_layer)


def _nemotron_names(view: ConfigView, kinds: Kinds) -> list[str]:
    """Cacheless Nemotron layers are "mlp" or "moe"; tell them apart from the source list."""
    raw = nemotron_layer_types(view).names
    legacy = {"linear_attention": "mamba", "full_attention": "attention"}
    return [legacy.get(name, name) for name in raw]


def _nemotron_moe(view: ConfigView) -> int:
    h, experts = hidden(view), view.int_value("n_routed_experts")
    latent = view.get("moe_latent_size")
    expert_in = h if latent is None else int(latent)
    latent_proj = 0 if latent is None else 2 * pb.linear(h, expert_in)
    mlp_bias = bool(view.value("mlp_bias"))
    shared = pb.plain_mlp(h, view.int_value("moe_shared_expert_intermediate_size"), mlp_bias)
    routed = pb.routed_experts(experts, expert_in, view.int_value("moe_intermediate_size"), gated=False)
    return pb.linear(h, experts) + routed + shared + latent_proj


def jamba(view: ConfigView, kinds: Kinds) -> int:
    h, intermediate = hidden(view), mamba1_intermediate(view)
    dt_rank_raw = view.value("mamba_dt_rank")
    dt_rank = math.ceil(h / 16) if dt_rank_raw == "auto" else view.int_value("mamba_dt_rank")
    mamba = pb.mamba1_mixer(h, intermediate=intermediate, d_state=view.int_value("mamba_d_state"),
                            d_conv=view.int_value("mamba_d_conv"), dt_rank=dt_rank,
                            proj_bias=bool(view.value("mamba_proj_bias")),
                            conv_bias=bool(view.value("mamba_conv_bias")))
    attention = gqa(view, qkv_bias=False, o_bias=False)
    experts, size = view.int_value("num_experts"), view.int_value("intermediate_size")
    period, offset = view.int_value("expert_layer_period"), view.int_value("expert_layer_offset")
    moe = pb.linear(h, experts) + pb.routed_experts(experts, h, size)
    per_layer = [(attention if is_attention(k) else mamba)
                 + (moe if experts > 1 and i % period == offset else dense_mlp(view)) + norms(view, 2)
                 for i, k in enumerate(kinds)]
    return decoder_total(view, per_layer)


def qwen3_next(view: ConfigView, kinds: Kinds) -> int:
    gdn = _gdn(view)
    attention = gqa(view, qk_norm=True, q_gate=True)
    experts = view.int_value("num_experts", 0)
    # (Qwen3.5 dense has no experts and none of the MoE keys.)
    moe = 0 if not experts else _qwen_moe(view, experts)
    sparse = qwen_sparse_layers(view, len(kinds))
    per_layer = [(attention if is_attention(k) else gdn) + (moe if i in sparse else dense_mlp(view))
                 + norms(view, 2) for i, k in enumerate(kinds)]
    return decoder_total(view, per_layer)


def _qwen_moe(view: ConfigView, experts: int) -> int:
    """Router + routed experts + the gated shared expert (Qwen3-Next, Qwen3.5 MoE, Qwen4-Exp)."""
    h = hidden(view)
    return (pb.linear(h, experts) + pb.routed_experts(experts, h, view.int_value("moe_intermediate_size"))
            + dense_mlp(view, "shared_expert_intermediate_size") + pb.linear(h, 1))  # + shared expert gate


def _gdn(view: ConfigView) -> int:
    return pb.gdn_mixer(hidden(view), k_heads=view.int_value("linear_num_key_heads"),
                        v_heads=view.int_value("linear_num_value_heads"),
                        k_head_dim=view.int_value("linear_key_head_dim"),
                        v_head_dim=view.int_value("linear_value_head_dim"),
                        conv_kernel=view.int_value("linear_conv_kernel_dim"))


def olmo_hybrid(view: ConfigView, kinds: Kinds) -> int:
    """OLMo hybrid: gated delta-net (q/k/v/g/a/b projections, the same sizes as Qwen3-Next's fused
    ones) or attention with full-width q/k RMSNorms, a gated MLP and two norms in every layer."""
    q_width = view.int_value("num_attention_heads") * model_head_dim(view)
    kv_width = view.int_value("num_key_value_heads") * model_head_dim(view)
    attention = gqa(view, qkv_bias=False, o_bias=False) + q_width + kv_width
    return decoder_total(view, [(attention if is_attention(k) else _gdn(view)) + dense_mlp(view) + norms(view, 2)
                                for k in kinds])


def lara_mini(view: ConfigView, kinds: Kinds) -> int:
    """LaraMini: gated delta-net or attention with per-head q/k norms (no output gate), and in every
    layer a MoE whose shared expert is added without a gate."""
    h, experts = hidden(view), view.int_value("num_experts")
    moe = (pb.linear(h, experts) + pb.routed_experts(experts, h, view.int_value("moe_intermediate_size"))
           + dense_mlp(view, "shared_expert_intermediate_size"))
    attention = gqa(view, qk_norm=True)
    return decoder_total(view, [(attention if is_attention(k) else _gdn(view)) + moe + norms(view, 2)
                                for k in kinds])


def _hyper_connection(view: ConfigView, *, inject: bool) -> int:
    """Qwen4-Exp's gated residual over hc_count streams: a norm, a low-rank mixer, an injection head."""
    streams = view.int_value("hc_count") * hidden(view)
    rank = view.int_value("hc_lowrank")
    return streams + 2 * streams * rank + (pb.linear(streams, view.int_value("hc_count")) if inject else 0)


def qwen4_exp(view: ConfigView, kinds: Kinds) -> int:
    """Qwen4-Exp as vLLM serves it without QSA / PLE (layer_rules.qwen4_exp_layers refuses those):
    Qwen3-Next's mixers and MoE in every layer, hyper-connections instead of layer norms (two per
    layer, one model-level mixer without injection, and no final norm)."""
    h = hidden(view)
    moe = _qwen_moe(view, view.int_value("num_experts"))
    attention = gqa(view, qk_norm=True, q_gate=True)
    per_layer = [(attention if is_attention(k) else _gdn(view)) + moe + 2 * _hyper_connection(view, inject=True)
                 for k in kinds]
    embed = view.int_value("vocab_size") * h
    lm_head = 0 if is_tied(view) else embed
    return embed + sum(per_layer) + _hyper_connection(view, inject=False) + lm_head


def minimax(view: ConfigView, kinds: Kinds) -> int:
    h, experts, size = hidden(view), view.int_value("num_local_experts"), view.int_value("intermediate_size")
    heads = view.int_value("num_attention_heads")
    lightning = pb.lightning_mixer(h, heads=heads, head_dim=model_head_dim(view))
    moe = pb.linear(h, experts) + pb.routed_experts(experts, h, size)
    if view.get("shared_intermediate_size"):
        view.note("shared_intermediate_size > 0: MiniMax shared experts are not counted "
                  "(transformers' MiniMax has none)")
    attention = gqa(view, qkv_bias=False, o_bias=False)
    return decoder_total(view, [(attention if is_attention(k) else lightning) + moe + norms(view, 2)
                                for k in kinds])


def kimi_linear(view: ConfigView, kinds: Kinds) -> int:
    heads, head_dim, kernel = kda_heads_and_dims(view)
    kda = pb.kda_mixer(hidden(view), heads=heads, head_dim=head_dim, conv_kernel=kernel)
    sparse_layers = _kimi_sparse_layers(view, len(kinds))
    moe = deepseek_moe(view, experts_key="num_experts", shared_key="num_shared_experts")
    per_layer = [(mla(view) if is_attention(k) else kda) + (moe if i in sparse_layers else dense_mlp(view))
                 + norms(view, 2) for i, k in enumerate(kinds)]
    return decoder_total(view, per_layer)


def _kimi_sparse_layers(view: ConfigView, num_layers: int) -> set[int]:
    types = view.get("mlp_layer_types")
    if types is not None:
        return {i for i, t in enumerate(types) if t == "sparse"}
    return set(range(view.int_value("first_k_dense_replace"), num_layers))
