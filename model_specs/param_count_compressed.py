"""Parameter count of DeepSeek-V4 (transformers DeepseekV4ForCausalLM; caches: compressed_attention.py).

Per decoder layer (modeling_deepseek_v4.py): a single-KV-head attention with low-rank queries
(q_a_proj + its RMSNorm weight, q_b_proj; kv_proj + kv_norm), a grouped low-rank output
(o_a_proj: o_groups blocks of heads x head_dim / o_groups -> o_lora_rank, one weight of
o_groups x o_lora_rank rows; o_b_proj) and per-head fp32 sinks; on compressed layers a compressor
(kv_proj and gate_proj to coff x head_dim, a ratio x coff x head_dim position bias, kv_norm; coff 2
at 4:1, where the layer also carries a lightning indexer with its own coff-2 compressor at
index_head_dim, q_b_proj to index_n_heads x index_head_dim and a weights_proj scorer); a MoE of
n_routed_experts gated experts and one shared expert, all moe_intermediate_size wide, with a router
weight (the hash router's token table is a buffer, not a parameter); two RMSNorm weights; and two
manifold hyper-connections (mHC: fn of (2 + m) x m rows over m x hidden, base, 3 scales; m =
hc_mult). The model adds the embedding, the final norm, the hyper head (m rows over m x hidden,
m biases, 1 scale) and an untied lm_head.
"""

from __future__ import annotations

from hkv.model_specs.compressed_attention import INDEXED_RATIO, compress_ratios
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.param_count_common import Kinds


def _compressor(hidden: int, width: int, ratio: int) -> int:
    coff = 2 if ratio == INDEXED_RATIO else 1
    return 2 * hidden * coff * width + ratio * coff * width + width


def _attention(view: ConfigView, ratio: int) -> int:
    hidden, heads, head_dim = view.int_value("hidden_size"), view.int_value("num_attention_heads"), view.int_value(
        "head_dim")
    q_lora, groups, o_lora = view.int_value("q_lora_rank"), view.int_value("o_groups"), view.int_value("o_lora_rank")
    params = (hidden * q_lora + q_lora + q_lora * heads * head_dim + hidden * head_dim + head_dim
              + heads * head_dim // groups * groups * o_lora + groups * o_lora * hidden + heads)
    if ratio > 1:
        params += _compressor(hidden, head_dim, ratio)
    if ratio == INDEXED_RATIO:
        index_heads, index_dim = view.int_value("index_n_heads"), view.int_value("index_head_dim")
        params += _compressor(hidden, index_dim, ratio) + q_lora * index_heads * index_dim + hidden * index_heads
    return params


def _moe(view: ConfigView) -> int:
    hidden, size = view.int_value("hidden_size"), view.int_value("moe_intermediate_size")
    experts, shared = view.int_value("n_routed_experts"), view.int_value("n_shared_experts", 1)
    return (experts + shared) * 3 * hidden * size + experts * hidden


def _hyper_connection(view: ConfigView) -> int:
    m, hidden = view.int_value("hc_mult"), view.int_value("hidden_size")
    rows = (2 + m) * m
    return rows * m * hidden + rows + 3


def deepseek_v4(view: ConfigView, kinds: Kinds) -> int:
    hidden, vocab, m = view.int_value("hidden_size"), view.int_value("vocab_size"), view.int_value("hc_mult")
    layers = sum(_attention(view, ratio) + _moe(view) + 2 * hidden + 2 * _hyper_connection(view)
                 for ratio in compress_ratios(view))
    lm_head = 0 if view.get("tie_word_embeddings") else vocab * hidden
    return vocab * hidden + layers + hidden + (m * m * hidden + m + 1) + lm_head
