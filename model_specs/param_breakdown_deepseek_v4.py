"""DeepSeek-V4's parameter breakdown, as vLLM 0.32 builds and shards it (vllm/models/deepseek_v4/).

Per decoder layer of compression ratio r (1: sliding window only; param_count_compressed.py counts
the same weights):
  attention.py DeepseekV4Attention: fused_wqa_wkv (hidden -> q_lora + head_dim, disable_tp:
    replicated), wq_b (q_lora -> heads x head_dim, column), wo_a (heads x head_dim / o_groups ->
    o_groups x o_lora, column), wo_b (o_groups x o_lora -> hidden, row), all through the quant
    config; q_norm, kv_norm, attn_sink per head;
  compressor.py DeepseekCompressor (r > 1; coff 2 at 4:1): fused_wkv_wgate (hidden -> 2 x coff x
    head_dim) built with quant_config=None and disable_tp, so a replicated dense weight here; ape
    (r x coff x head_dim), norm;
  DeepseekV4Indexer (r = 4): wq_b (q_lora -> index_heads x index_dim, ReplicatedLinear, quantized),
    weights_proj (hidden -> index_heads, quant_config=None: dense), its own coff-2 compressor;
  nvidia/model.py DeepseekV4MoE: the router (GateLinear, unquantized), n_routed_experts fused
    experts, the shared expert (DeepseekV4MLP: MergedColumn gate|up + Row down, quantized);
  DeepseekV4DecoderLayer: attn_norm, ffn_norm, hc_attn / hc_ffn fn (mix x m x hidden), base, scale.
The model adds the hyper head (hc_head fn / base / scale) beside the final norm.
MTP (nvidia/mtp.py, `num_nextn_predict_layers` layers past num_hidden_layers, ratio 1): enorm,
hnorm, e_proj and h_proj (hidden -> hidden, ReplicatedLinear, quantized), its hyper head and one
decoder layer; its embed_tokens and shared_head.head are replaced by the target's at load
(llm_base_proposer `_maybe_share_embeddings` / `_maybe_share_lm_head`), so they are left out.
Rotary caches (common/rope.py, DeepseekV4ScalingRotaryEmbedding): fp32 cos|sin over rope_dim =
qk_rope_head_dim, one for the sliding layers (max_position_embeddings positions, factor 1) and one
for the compressed layers (original_max_position_embeddings x factor).
Left out: fp32 parameters (hc_*, ape, sinks, e_score_correction_bias) are counted in the model
dtype like every dense weight (~0.07 GiB under on V4-Flash); the hash layers' int32 tid2eid token
table (vocab x top-k, ~3 MiB a layer); the shared expert's per-rank padding to whole 128-blocks
(none on V4-Flash at TP 1, 2, 4, 8, 16).
"""

from __future__ import annotations

from dataclasses import replace

from hkv.model_specs.compressed_attention import INDEXED_RATIO, compress_ratios
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.param_breakdown import HEAD_LAYER, DenseWeight, LinearWeight, Part
from hkv.model_specs.param_breakdown_blocks import Weights
from hkv.model_specs.param_count_common import Kinds

LM: Part = "language_model"
MTP: Part = "mtp"
FP32_IN_MODEL_DTYPE = 2  # elements of a bf16 buffer one fp32 element takes (DeepSeek-V4 runs in bf16)


def _ratio(view: ConfigView, layer: int) -> int:
    ratios = compress_ratios(view)
    return max(1, ratios[layer]) if layer < len(ratios) else 1  # MTP layers: sliding window only


def _compressor(p: str, layer: int, part: Part, hidden: int, width: int, ratio: int) -> Weights:
    coff = 2 if ratio == INDEXED_RATIO else 1
    return [
        DenseWeight(p + "fused_wkv_wgate", hidden * 2 * coff * width, part, layer),
        DenseWeight(p + "ape", ratio * coff * width, part, layer),
        DenseWeight(p + "norm", width, part, layer),
    ]


def _attention(view: ConfigView, p: str, layer: int, part: Part) -> Weights:
    hidden, heads, head_dim = view.int_value("hidden_size"), view.int_value("num_attention_heads"), view.int_value(
        "head_dim")
    q_lora, groups, o_lora = view.int_value("q_lora_rank"), view.int_value("o_groups"), view.int_value("o_lora_rank")
    a = p + "attn."
    out: Weights = [
        LinearWeight(a + "fused_wqa_wkv", hidden, q_lora + head_dim, part, layer, "replicated"),
        LinearWeight(a + "wq_b", q_lora, heads * head_dim, part, layer, "column"),
        LinearWeight(a + "wo_a", heads * head_dim // groups, groups * o_lora, part, layer, "column"),
        LinearWeight(a + "wo_b", groups * o_lora, hidden, part, layer, "row"),
        DenseWeight(a + "q_norm", q_lora, part, layer),
        DenseWeight(a + "kv_norm", head_dim, part, layer),
        DenseWeight(a + "attn_sink", heads, part, layer),
    ]
    ratio = _ratio(view, layer)
    if ratio > 1:
        out += _compressor(a + "compressor.", layer, part, hidden, head_dim, ratio)
    if ratio == INDEXED_RATIO:
        index_heads, index_dim = view.int_value("index_n_heads"), view.int_value("index_head_dim")
        i = a + "indexer."
        out += [
            LinearWeight(i + "wq_b", q_lora, index_heads * index_dim, part, layer, "replicated"),
            DenseWeight(i + "weights_proj", hidden * index_heads, part, layer),
            *_compressor(i + "compressor.", layer, part, hidden, index_dim, ratio),
        ]
    return out


def _moe(view: ConfigView, p: str, layer: int, part: Part) -> Weights:
    hidden, size = view.int_value("hidden_size"), view.int_value("moe_intermediate_size")
    experts, shared = view.int_value("n_routed_experts"), view.int_value("n_shared_experts", 1)
    f = p + "ffn."
    return [
        DenseWeight(f + "gate", hidden * experts, part, layer),
        LinearWeight(f + "experts", hidden, 2 * size, part, layer, "column", experts, role="experts_w13"),
        LinearWeight(f + "experts", size, hidden, part, layer, "row", experts, role="experts_w2"),
        LinearWeight(f + "shared_experts.gate_up_proj", hidden, 2 * size * shared, part, layer, "column"),
        LinearWeight(f + "shared_experts.down_proj", size * shared, hidden, part, layer, "row"),
    ]


def _hyper_head(view: ConfigView, p: str, part: Part) -> Weights:
    m, hidden = view.int_value("hc_mult"), view.int_value("hidden_size")
    return [DenseWeight(p + "hc_head_fn", m * m * hidden + m + 1, part, HEAD_LAYER)]  # fn, base, scale


def _decoder_layer(view: ConfigView, p: str, layer: int, part: Part) -> Weights:
    m, hidden = view.int_value("hc_mult"), view.int_value("hidden_size")
    mix = (2 + m) * m
    return [
        *_attention(view, p, layer, part),
        *_moe(view, p, layer, part),
        DenseWeight(p + "attn_norm", hidden, part, layer),
        DenseWeight(p + "ffn_norm", hidden, part, layer),
        DenseWeight(p + "hc_attn", mix * m * hidden + mix + 3, part, layer),  # fn, base, scale
        DenseWeight(p + "hc_ffn", mix * m * hidden + mix + 3, part, layer),
    ]


def deepseek_v4_layer(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    """Decoder layer i; the last one also carries the model's hyper head (a model-level weight the
    per-layer builders have no other place for; it sits with the final norm)."""
    out = _decoder_layer(view, p, i, LM)
    if i == len(kinds) - 1:
        out += _hyper_head(view, p[: -len(f"{i}.")] + "hc_head.", LM)
    return out


def deepseek_v4_mtp(view: ConfigView, kinds: Kinds, builder: object) -> Weights:
    """The MTP layers vLLM loads when drafting with them (embeddings and head shared with the target)."""
    hidden = view.int_value("hidden_size")
    out: Weights = []
    for j in range(view.int_value("num_nextn_predict_layers", 0)):
        p = f"mtp.{j}."
        layer = [
            DenseWeight(p + "enorm", hidden, MTP, HEAD_LAYER),
            DenseWeight(p + "hnorm", hidden, MTP, HEAD_LAYER),
            LinearWeight(p + "e_proj", hidden, hidden, MTP, HEAD_LAYER, "replicated"),
            LinearWeight(p + "h_proj", hidden, hidden, MTP, HEAD_LAYER, "replicated"),
            DenseWeight(p + "shared_head.norm", hidden, MTP, HEAD_LAYER),
            *_hyper_head(view, p, MTP),
        ]
        block = _decoder_layer(view, p, len(kinds) + j, MTP)  # index past compress_ratios: ratio 1
        out += layer + [_at_head(w) for w in block]
    return out


def _at_head(w: LinearWeight | DenseWeight) -> LinearWeight | DenseWeight:
    return replace(w, layer=HEAD_LAYER)


def deepseek_v4_rotary(view: ConfigView) -> tuple[DenseWeight, ...]:
    """The two fp32 cos|sin caches (in model-dtype elements): sliding layers over
    max_position_embeddings, compressed layers over original_max_position_embeddings x factor."""
    rope = view.get("rope_parameters") or view.get("rope_scaling") or {}
    rope = rope.get("compress", rope) if isinstance(rope.get("compress"), dict) else rope
    rope_dim = view.int_value("qk_rope_head_dim")
    max_pos = view.int_value("max_position_embeddings")
    kind = rope.get("rope_type", rope.get("type", "default"))
    compressed = max_pos if kind == "default" else int(
        int(rope.get("original_max_position_embeddings", max_pos)) * float(rope.get("factor", 1.0))
    )
    return tuple(
        DenseWeight(f"rotary_emb.{name}.cos_sin_cache", positions * rope_dim * FP32_IN_MODEL_DTYPE, LM)
        for name, positions in (("main", max_pos), ("compress", compressed))
    )
