"""Parameter counts of LFM2 and LFM2-MoE: short-conv or GQA-with-qk-norm operators, then an MLP.

Per layer: operator_norm + ffn_norm; a conv layer has in_proj (hidden -> 3 x hidden: B, C, x),
a depthwise conv of conv_L_cache taps and out_proj, each with a bias when `conv_bias`.
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.param_count_common import Kinds, decoder_total, gqa, hidden, is_attention, norms


def _short_conv(view: ConfigView) -> int:
    h, bias = hidden(view), bool(view.value("conv_bias", False))
    return pb.linear(h, 3 * h, bias) + h * view.int_value("conv_L_cache") + (h if bias else 0) + pb.linear(h, h, bias)


def _operator(view: ConfigView, layer: tuple) -> int:
    return gqa(view, qkv_bias=False, o_bias=False, qk_norm=True) if is_attention(layer) else _short_conv(view)


def lfm2_ffn_dim(view: ConfigView) -> int:
    """Lfm2MLP's width: 2/3 of intermediate_size when auto-adjusted, times the multiplier, rounded
    up to block_multiple_of."""
    size = view.int_value("intermediate_size")
    if view.value("block_auto_adjust_ff_dim", True):
        size = int(2 * size / 3)
        multiplier = view.get("block_ffn_dim_multiplier")
        if multiplier is not None:
            size = int(multiplier * size)
            step = view.int_value("block_multiple_of", 256)
            size = step * ((size + step - 1) // step)
    return size


def lfm2(view: ConfigView, kinds: Kinds) -> int:
    mlp = pb.gated_mlp(hidden(view), lfm2_ffn_dim(view))
    return decoder_total(view, [_operator(view, layer) + mlp + norms(view, 2) for layer in kinds])


def lfm2_moe(view: ConfigView, kinds: Kinds) -> int:
    """Dense gated MLP (intermediate_size) in the first num_dense_layers, then a router and
    routed experts of moe_intermediate_size (the expert bias is a buffer, not a parameter)."""
    h, experts = hidden(view), view.int_value("num_experts")
    dense = pb.gated_mlp(h, view.int_value("intermediate_size"))
    sparse = pb.linear(h, experts) + pb.routed_experts(experts, h, view.int_value("moe_intermediate_size"))
    first_sparse = view.int_value("num_dense_layers")
    return decoder_total(view, [_operator(view, layer) + (dense if i < first_sparse else sparse) + norms(view, 2)
                                for i, layer in enumerate(kinds)])
