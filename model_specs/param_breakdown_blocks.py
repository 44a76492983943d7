"""Building blocks of a ParamBreakdown: the weights of one attention / MLP / MoE / GDN block.

Each function returns the weights of one block of one layer, named as the checkpoint names them
under `prefix` (e.g. "model.layers.3."), split as vLLM splits them over tensor-parallel ranks
(vllm/model_executor/layers/linear.py: QKV and gate/up are column-parallel, o_proj and down_proj
row-parallel; routers are replicated; fused MoE experts split their intermediate dimension).
"""

from __future__ import annotations

from hkv.model_specs.param_breakdown import DenseWeight, LinearWeight, Part

Weights = list[LinearWeight | DenseWeight]


def weights_numel(weights: Weights) -> int:
    """The parameters `weights` hold (a family's exact count is its breakdown's sum)."""
    return sum(w.numel if isinstance(w, DenseWeight) else w.num_params for w in weights)


def attention(
    prefix: str,
    layer: int,
    part: Part,
    *,
    hidden: int,
    q_heads: int,
    kv_heads: int,
    head_dim: int,
    qkv_bias: bool = False,
    o_bias: bool = False,
    qk_norm: bool = False,
    q_gate: bool = False,
    sinks: bool = False,
) -> Weights:
    """q/k/v/o (q doubled by an output gate), optional per-head q/k norms and attention sinks."""
    p = prefix + "self_attn."
    q_out = q_heads * head_dim * (2 if q_gate else 1)
    out: Weights = [
        LinearWeight(p + "q_proj", hidden, q_out, part, layer, "column", bias=qkv_bias),
        LinearWeight(
            p + "k_proj", hidden, kv_heads * head_dim, part, layer, "column", bias=qkv_bias, kv_heads=kv_heads
        ),
        LinearWeight(
            p + "v_proj", hidden, kv_heads * head_dim, part, layer, "column", bias=qkv_bias, kv_heads=kv_heads
        ),
        LinearWeight(p + "o_proj", q_heads * head_dim, hidden, part, layer, "row", bias=o_bias),
    ]
    if qk_norm:
        out += [
            DenseWeight(p + "q_norm", head_dim, part, layer),
            DenseWeight(p + "k_norm", head_dim, part, layer),
        ]
    if sinks:  # one logit per query head, split with the heads
        out.append(DenseWeight(p + "sinks", q_heads, part, layer, "sharded"))
    return out


def gated_mlp(
    prefix: str,
    layer: int,
    part: Part,
    *,
    hidden: int,
    intermediate: int,
    bias: bool = False,
    name: str = "mlp",
) -> Weights:
    p = f"{prefix}{name}."
    return [
        LinearWeight(p + "gate_proj", hidden, intermediate, part, layer, "column", bias=bias),
        LinearWeight(p + "up_proj", hidden, intermediate, part, layer, "column", bias=bias),
        LinearWeight(p + "down_proj", intermediate, hidden, part, layer, "row", bias=bias),
    ]


def routed_experts(
    prefix: str,
    layer: int,
    part: Part,
    *,
    num_experts: int,
    hidden: int,
    intermediate: int,
    bias: bool = False,
    router_bias: bool = False,
    router_name: str = "gate",
    name: str = "mlp",
) -> Weights:
    """Router (replicated, never quantized by vLLM's MoE models) + stacked gate|up and down experts,
    under `prefix` + `name` (the MoE block's checkpoint name)."""
    p = f"{prefix}{name}."
    return [
        DenseWeight(p + router_name, hidden * num_experts + (num_experts if router_bias else 0), part, layer),
        LinearWeight(
            p + "experts",
            hidden,
            2 * intermediate,
            part,
            layer,
            "column",
            num_experts,
            bias,
            role="experts_w13",
        ),
        LinearWeight(
            p + "experts", intermediate, hidden, part, layer, "row", num_experts, bias, role="experts_w2"
        ),
    ]


def shared_expert(prefix: str, layer: int, part: Part, *, hidden: int, intermediate: int) -> Weights:
    """Qwen2-MoE / Qwen3-Next shared expert behind a one-logit sigmoid gate."""
    return [
        *gated_mlp(
            prefix + "mlp.", layer, part, hidden=hidden, intermediate=intermediate, name="shared_expert"
        ),
        DenseWeight(prefix + "mlp.shared_expert_gate", hidden, part, layer),
    ]


def gated_delta_net(
    prefix: str,
    layer: int,
    part: Part,
    *,
    hidden: int,
    k_heads: int,
    v_heads: int,
    k_head_dim: int,
    v_head_dim: int,
    conv_kernel: int,
    split_names: bool,
) -> Weights:
    """Qwen3-Next / Qwen3.5 gated delta net. `split_names`: Qwen3.5's checkpoint names the q|k|v, z,
    b and a projections separately (Qwen3-Next fuses them as in_proj_qkvz and in_proj_ba)."""
    p = prefix + "linear_attn."
    key_dim, value_dim = k_heads * k_head_dim, v_heads * v_head_dim
    conv_dim = 2 * key_dim + value_dim
    if split_names:
        projections = [
            LinearWeight(p + "in_proj_qkv", hidden, conv_dim, part, layer),
            LinearWeight(p + "in_proj_z", hidden, value_dim, part, layer),
            LinearWeight(p + "in_proj_b", hidden, v_heads, part, layer),
            LinearWeight(p + "in_proj_a", hidden, v_heads, part, layer),
        ]
    else:
        projections = [
            LinearWeight(p + "in_proj_qkvz", hidden, conv_dim + value_dim, part, layer),
            LinearWeight(p + "in_proj_ba", hidden, 2 * v_heads, part, layer),
        ]
    return [
        *projections,
        DenseWeight(p + "conv1d", conv_dim * conv_kernel, part, layer, "sharded"),
        DenseWeight(p + "dt_bias", v_heads, part, layer, "sharded"),
        DenseWeight(p + "A_log", v_heads, part, layer, "sharded"),
        DenseWeight(p + "norm", v_head_dim, part, layer),
        LinearWeight(p + "out_proj", value_dim, hidden, part, layer, "row"),
    ]


def norms(prefix: str, layer: int, part: Part, names: tuple[str, ...], size: int) -> Weights:
    return [DenseWeight(prefix + name, size, part, layer) for name in names]
