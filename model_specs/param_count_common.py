"""Config readers shared by the per-family parameter counters."""

from __future__ import annotations

from collections.abc import Iterable

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import model_head_dim, num_kv_heads, num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.layer_kinds import LayerKind

Kinds = tuple[tuple[LayerKind, ...], ...]


def hidden(view: ConfigView) -> int:
    return view.int_value("hidden_size")


def is_tied(view: ConfigView) -> bool:
    return bool(view.value("tie_word_embeddings", False, why="assumed an untied lm_head"))


def decoder_total(view: ConfigView, per_layer: Iterable[int], *, extra: int = 0) -> int:
    """Embeddings + layers + final norm + lm_head (absent when tied to the embeddings) + `extra`."""
    embed = view.int_value("vocab_size") * hidden(view)
    lm_head = 0 if is_tied(view) else embed
    return embed + sum(per_layer) + hidden(view) + lm_head + extra


def gqa(view: ConfigView, *, qkv_bias: bool | None = None, o_bias: bool | None = None,
        qk_norm: bool = False, q_gate: bool = False) -> int:
    """A GQA attention block; biases default to the config's `attention_bias`."""
    bias = bool(view.value("attention_bias", False))
    return pb.gqa_attention(
        hidden(view), num_query_heads(view), num_kv_heads(view), model_head_dim(view),
        qkv_bias=bias if qkv_bias is None else qkv_bias, o_bias=bias if o_bias is None else o_bias,
        qk_norm=qk_norm, q_gate=q_gate)


def mla(view: ConfigView) -> int:
    q_lora = view.get("q_lora_rank")
    return pb.mla_attention(
        hidden(view), num_query_heads(view), q_lora_rank=None if q_lora is None else int(q_lora),
        kv_lora_rank=view.int_value("kv_lora_rank"), qk_nope_dim=view.int_value("qk_nope_head_dim"),
        qk_rope_dim=view.int_value("qk_rope_head_dim"), v_head_dim=view.int_value("v_head_dim"),
        bias=bool(view.value("attention_bias", False)))


def dense_mlp(view: ConfigView, size_key: str = "intermediate_size", *, bias: bool = False) -> int:
    return pb.gated_mlp(hidden(view), view.int_value(size_key), bias)


def deepseek_moe(view: ConfigView, *, experts_key: str, shared_key: str) -> int:
    """Router + gated experts of moe_intermediate_size + shared experts (moe size x n_shared)."""
    experts, size = view.int_value(experts_key), view.int_value("moe_intermediate_size")
    shared = size * view.int_value(shared_key)
    return pb.linear(hidden(view), experts) + pb.routed_experts(experts, hidden(view), size) + pb.gated_mlp(
        hidden(view), shared)


def qwen_sparse_layers(view: ConfigView, num_layers: int) -> set[int]:
    """Qwen-MoE rule: MoE unless listed in mlp_only_layers, every decoder_sparse_step-th layer."""
    experts, step = view.int_value("num_experts", 0), view.int_value("decoder_sparse_step")
    mlp_only = set(view.get("mlp_only_layers") or [])
    return {i for i in range(num_layers) if i not in mlp_only and experts > 0 and (i + 1) % step == 0}


def norms(view: ConfigView, count: int) -> int:
    """`count` hidden-sized norm weights (RMSNorm, or Cohere's bias-free LayerNorm)."""
    return count * hidden(view)


def has_kind(layer: tuple[LayerKind, ...], kind: LayerKind) -> bool:
    return kind in layer


def is_attention(layer: tuple[LayerKind, ...]) -> bool:
    return any(k in layer for k in (LayerKind.FULL, LayerKind.SLIDING, LayerKind.CHUNKED))
