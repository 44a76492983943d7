"""Parameter count of Inkling (model_type inkling_text), as transformers 5.24's InklingForCausalLM
builds it and vLLM 0.32's InklingForCausalLM loads it.

Per layer, local ("hybrid_sliding") layers with the swa_* geometry, global ones with the plain one:
attention q/k/v/o plus `r_proj` (d_rel per query head), per-head q/k norms, a relative-logits
bank of d_rel x extent (extent = sliding_window_size on local layers, rel_extent on global ones),
depthwise short convs (kernel conv_kernel_size, no bias) on K, V and on the attention and MLP
outputs; two norms; then a dense gated MLP (intermediate_size) or a MoE: a router over routed +
shared experts, `n_routed_experts` routed and `n_shared_experts` shared gated experts of
moe_intermediate_size, and a one-element global scale (also on the dense MLP). The embedding has its
own norm; the lm_head is never tied (`_tied_weights_keys = {}`).

vLLM loads the same tensors in bulk; it differs only by a few rows: the router padded to a multiple
of 8 experts, and no embed norm or global scale unless the checkpoint asks for them (a few thousand
parameters against ~10^11).
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.inkling_layers import DEFAULT_CONV_KERNEL_LEN, DEFAULT_WINDOW_LEN
from hkv.model_specs.layer_kinds import LayerKind
from hkv.model_specs.param_count_common import Kinds, hidden

GLOBAL_SCALE = 1  # InklingMLP / InklingTopkRouter: nn.Parameter(torch.ones(1))


def _attention(view: ConfigView, *, local: bool, kernel_len: int) -> int:
    h = hidden(view)
    heads = view.int_value("num_attention_heads")
    head_dim = view.int_value("head_dim", h // heads)
    kv_heads = view.int_value("num_key_value_heads")
    if local:
        heads = view.int_value("swa_num_attention_heads", heads)
        kv_heads = view.int_value("swa_num_key_value_heads", kv_heads)
        head_dim = view.int_value("swa_head_dim", head_dim)
        extent = view.int_value("sliding_window_size", DEFAULT_WINDOW_LEN, why="InklingTextConfig default")
    else:
        extent = view.int_value("rel_extent", 1024, why="InklingTextConfig default")
    d_rel = view.int_value("d_rel", 16, why="InklingTextConfig default")
    kv_width = kv_heads * head_dim
    projections = pb.gqa_attention(h, heads, kv_heads, head_dim, qk_norm=True) + pb.linear(h, heads * d_rel)
    return projections + d_rel * extent + 2 * kv_width * kernel_len


def _mlp_widths(view: ConfigView) -> tuple[int, int]:
    """(dense MLP width, routed/shared expert width). Original checkpoints name the experts' width
    intermediate_size and the dense one dense_intermediate_size; transformers and vLLM both swap."""
    if view.has("dense_intermediate_size"):
        return view.int_value("dense_intermediate_size"), view.int_value("intermediate_size")
    return view.int_value("intermediate_size"), view.int_value("moe_intermediate_size")


def _sparse_layers(view: ConfigView, num_layers: int) -> list[bool]:
    types = view.get("mlp_layer_types")
    if types is None:
        dense_len = view.int_value("dense_mlp_idx", 0, why="InklingTextConfig default: every MLP sparse")
        return [i >= dense_len for i in range(num_layers)]
    if not isinstance(types, list) or len(types) != num_layers or any(t not in ("dense", "sparse") for t in types):
        raise InvalidConfigError(f"mlp_layer_types must list 'dense' or 'sparse' for each of the {num_layers} "
                                 f"layers, got {types!r}")
    return [t == "sparse" for t in types]


def inkling(view: ConfigView, kinds: Kinds) -> int:
    h = hidden(view)
    kernel_len = view.int_value("sconv_kernel_size") if view.has("sconv_kernel_size") else view.int_value(
        "conv_kernel_size", DEFAULT_CONV_KERNEL_LEN, why="InklingTextConfig default")
    dense_len, expert_len = _mlp_widths(view)
    routed, shared = view.int_value("n_routed_experts"), view.int_value("n_shared_experts")
    moe = (pb.linear(h, routed + shared) + GLOBAL_SCALE + pb.routed_experts(routed, h, expert_len)
           + shared * pb.gated_mlp(h, expert_len))
    dense = pb.gated_mlp(h, dense_len) + GLOBAL_SCALE
    per_layer_rest = 2 * h + 2 * h * kernel_len  # the two norms, the attention- and MLP-output convs
    total = 0
    for layer_kinds, sparse in zip(kinds, _sparse_layers(view, len(kinds)), strict=True):
        total += _attention(view, local=LayerKind.SLIDING in layer_kinds, kernel_len=kernel_len)
        total += (moe if sparse else dense) + per_layer_rest
    embed = view.int_value("vocab_size") * h
    return embed + h + total + h + embed  # embedding + its norm, layers, final norm, untied lm_head
