"""Parameter counts of the building blocks of decoder LLMs, from dimensions only.

Each function returns the number of scalars the matching transformers module registers as
parameters (buffers such as RoPE tables or `e_score_correction_bias` are not parameters).
"""

from __future__ import annotations


def linear(n_in: int, n_out: int, bias: bool = False) -> int:
    return n_in * n_out + (n_out if bias else 0)


def gqa_attention(hidden: int, q_heads: int, kv_heads: int, head_dim: int, *, qkv_bias: bool = False,
                  o_bias: bool = False, qk_norm: bool = False, q_gate: bool = False) -> int:
    """q/k/v/o projections; `q_gate` doubles q_proj (Qwen3-Next's output gate), `qk_norm` adds two
    head_dim-sized RMSNorm weights."""
    q_out = q_heads * head_dim * (2 if q_gate else 1)
    return (linear(hidden, q_out, qkv_bias) + 2 * linear(hidden, kv_heads * head_dim, qkv_bias)
            + linear(q_heads * head_dim, hidden, o_bias) + (2 * head_dim if qk_norm else 0))


def mla_attention(hidden: int, heads: int, *, q_lora_rank: int | None, kv_lora_rank: int, qk_nope_dim: int,
                  qk_rope_dim: int, v_head_dim: int, bias: bool = False) -> int:
    """DeepSeek-V2/V3 multi-head latent attention (optional low-rank q, compressed kv + shared rope key)."""
    qk_head = qk_nope_dim + qk_rope_dim
    if q_lora_rank is None:
        q = linear(hidden, heads * qk_head)
    else:
        q = linear(hidden, q_lora_rank, bias) + q_lora_rank + linear(q_lora_rank, heads * qk_head)
    kv = (linear(hidden, kv_lora_rank + qk_rope_dim, bias) + kv_lora_rank
          + linear(kv_lora_rank, heads * (qk_nope_dim + v_head_dim)))
    return q + kv + linear(heads * v_head_dim, hidden, bias)


def gated_mlp(hidden: int, intermediate: int, bias: bool = False) -> int:
    """SwiGLU-style gate/up/down."""
    return 2 * linear(hidden, intermediate, bias) + linear(intermediate, hidden, bias)


def plain_mlp(hidden: int, intermediate: int, bias: bool = False) -> int:
    """Non-gated up/down (Nemotron-H's relu2 MLP)."""
    return linear(hidden, intermediate, bias) + linear(intermediate, hidden, bias)


def routed_experts(num_experts: int, hidden: int, intermediate: int, *, gated: bool = True,
                   bias: bool = False) -> int:
    """Stacked expert weights (gate_up + down, or up + down), without router or shared experts."""
    per_expert = (gated_mlp if gated else plain_mlp)(hidden, intermediate, bias)
    return num_experts * per_expert


def mamba2_mixer(hidden: int, *, intermediate: int, conv_dim: int, n_heads: int, conv_kernel: int,
                 proj_bias: bool, conv_bias: bool, out_bias: bool, gated_norm: bool = True) -> int:
    """in_proj (z, xBC, dt) + depthwise conv1d + dt_bias/A_log/D + gated RMSNorm + out_proj."""
    return (linear(hidden, intermediate + conv_dim + n_heads, proj_bias)
            + conv_dim * conv_kernel + (conv_dim if conv_bias else 0)
            + 3 * n_heads + (intermediate if gated_norm else 0)
            + linear(intermediate, hidden, out_bias))


def mamba1_mixer(hidden: int, *, intermediate: int, d_state: int, d_conv: int, dt_rank: int,
                 proj_bias: bool, conv_bias: bool, inner_norms: bool = True) -> int:
    """Mamba1: in_proj, conv1d, x_proj, dt_proj, A_log, D, out_proj; with `inner_norms` also
    Jamba's dt/B/C RMSNorm weights (Mamba and Falcon-Mamba have none)."""
    return (linear(hidden, 2 * intermediate, proj_bias)
            + intermediate * d_conv + (intermediate if conv_bias else 0)
            + linear(intermediate, dt_rank + 2 * d_state) + linear(dt_rank, intermediate, True)
            + intermediate * d_state + intermediate
            + linear(intermediate, hidden, proj_bias) + (dt_rank + 2 * d_state if inner_norms else 0))


def gdn_mixer(hidden: int, *, k_heads: int, v_heads: int, k_head_dim: int, v_head_dim: int,
              conv_kernel: int) -> int:
    """Qwen3-Next gated delta-net: in_proj_qkvz, in_proj_ba, conv1d, dt_bias, A_log, norm, out_proj."""
    key_dim, value_dim = k_heads * k_head_dim, v_heads * v_head_dim
    conv_dim = 2 * key_dim + value_dim
    return (linear(hidden, 2 * key_dim + 2 * value_dim) + linear(hidden, 2 * v_heads)
            + conv_dim * conv_kernel + 2 * v_heads + v_head_dim + linear(value_dim, hidden))


def lightning_mixer(hidden: int, *, heads: int, head_dim: int) -> int:
    """MiniMax lightning attention: qkv_proj, output_gate, out_proj and an RMSNorm over heads*head_dim."""
    inner = heads * head_dim
    return linear(hidden, 3 * inner) + linear(hidden, inner) + linear(inner, hidden) + inner


def kda_mixer(hidden: int, *, heads: int, head_dim: int, conv_kernel: int) -> int:
    """Kimi delta attention: q/k/v, conv over q|k|v, low-rank forget gate and output gate, beta, norm."""
    inner = heads * head_dim
    low_rank_gate = linear(hidden, head_dim) + linear(head_dim, inner)
    return (3 * linear(hidden, inner) + 3 * inner * conv_kernel
            + low_rank_gate + inner + heads  # forget gate + dt_bias + A_log
            + linear(hidden, heads)  # b_proj (beta)
            + low_rank_gate + head_dim + linear(inner, hidden))  # output gate, o_norm, o_proj
