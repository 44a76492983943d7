"""Per-rank weight bytes as vLLM shards them, on a tiny Llama worked out by hand.

The model: hidden 64, 4 heads / 2 KV heads of 16, intermediate 96, 4 layers, vocab 1,000 (untied),
128 positions, bf16 (2 bytes).
"""

from __future__ import annotations

from dataclasses import replace

from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.base import QuantContext, Unquantized
from hkv.planner.budget.quantization.mxfp4 import Mxfp4
from hkv.planner.budget.weight_shards import linear_shape, most_loaded_rank, pad_vocab, pp_layer_ranges
from hkv.planner.budget.weights import weights_term
from hkv.planner.plan_config import PlanConfig

CONFIG = dict(
    model_type="llama",
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=96,
    num_hidden_layers=4,
    vocab_size=1000,
    max_position_embeddings=128,
    tie_word_embeddings=False,
    torch_dtype="bfloat16",
)
BF16 = QuantContext(2, None)
LM = ("language_model",)


def _breakdown(**overrides):
    return from_hf_config(dict(CONFIG, **overrides), "tiny").param_breakdown


def test_vocab_padding_to_64() -> None:
    assert pad_vocab(1000) == 1024 and pad_vocab(1024) == 1024 and pad_vocab(151_936) == 151_936


def test_tp4_shards_with_kv_head_replication_and_vocab_padding() -> None:
    # embed and lm_head: 1,000 -> 1,024 rows / 4 = 256 rows x 64 = 16,384 elements each
    # per layer: q 64 x (64 / 4) = 1,024; k, v: 2 KV heads < 4 ranks -> 1 head of 16 each: 1,024 + 1,024;
    #   o (row): (64 / 4) x 64 = 1,024; gate, up: 64 x 24 = 1,536 each; down (row): 24 x 64 = 1,536;
    #   two norms, replicated: 128. Layer: 4,096 + 4,608 + 128 = 8,832
    # final norm 64. Elements: 2 x 16,384 + 4 x 8,832 + 64 = 68,160 -> 136,320 bytes
    rank = most_loaded_rank(_breakdown(), Unquantized(), BF16, tp=4, pp=1, parts=LM)
    assert rank.linear_bytes + rank.dense_bytes == 136_320
    assert rank.buffer_bytes == 128 * 16 * 2  # rotary cos/sin cache, replicated: 4,096


def test_pp2_takes_the_more_loaded_stage() -> None:
    # TP 1 layer: q 4,096 + k 2,048 + v 2,048 + o 4,096 + 3 x 6,144 + norms 128 = 30,848
    # stage 0: embed 1,024 x 64 = 65,536 + 2 layers 61,696 = 127,232
    # stage 1: 2 layers 61,696 + final norm 64 + lm_head 65,536 = 127,296  <- the most loaded
    rank = most_loaded_rank(_breakdown(), Unquantized(), BF16, tp=1, pp=2, parts=LM)
    assert rank.linear_bytes + rank.dense_bytes == 2 * 127_296
    # tied: the last stage still builds its own lm_head (a copy of the embeddings): same bytes
    tied = most_loaded_rank(_breakdown(tie_word_embeddings=True), Unquantized(), BF16, tp=1, pp=2, parts=LM)
    assert tied.linear_bytes + tied.dense_bytes == 2 * 127_296


def test_pp_layer_split_follows_vllm() -> None:
    # get_pp_indices: 10 layers over 4 stages -> 2 each, the remaining 2 to stages 2 and 1 (never the last)
    assert [len(r) for r in pp_layer_ranges(10, 4)] == [2, 3, 3, 2]
    assert [len(r) for r in pp_layer_ranges(8, 2)] == [4, 4]


def test_row_parallel_bias_stays_whole() -> None:
    o_proj = LinearWeight("x.o_proj", 4096, 2880, parallel="row", bias=True)
    assert linear_shape(o_proj, 8) == (512, 2880)  # inputs split, outputs (and the bias) whole


def test_mxfp4_expert_per_rank_padding_on_marlin() -> None:
    # gpt-oss-120b w13 at TP 8: intermediate 2880 / 8 = 360 per rank -> 384 (multiple of 128), hidden 3072:
    # stored (3,072 in, 768 out): 3,072 x 768 / 2 = 1,179,648 values + 96 x 768 = 73,728 scales
    w13 = LinearWeight("m.experts", 2880, 5760, role="experts_w13")
    k, n = linear_shape(w13, 8)
    assert (k, n) == (2880, 720)
    assert Mxfp4().linear_bytes(w13, k, n, QuantContext(2, (8, 0))) == 1_179_648 + 73_728


def test_weights_term_given_and_config_sources() -> None:
    spec = from_hf_config(dict(CONFIG), "tiny")
    given = weights_term(spec, PlanConfig(gpu="h100", weights_bytes=123))
    assert (given.bytes, given.source, given.is_exact) == (123, "given", True)
    term = weights_term(spec, PlanConfig(gpu="h100", tp=4))
    assert term.source == "config" and term.bytes == 136_320 + 4_096
    assert term.low_bytes < term.bytes < term.high_bytes


def test_mtp_layers_load_only_with_mtp_speculation() -> None:
    cfg9b = dict(
        CONFIG,
        model_type="qwen3_5_text",
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        linear_conv_kernel_dim=4,
        full_attention_interval=4,
        mtp_num_hidden_layers=1,
        tie_word_embeddings=True,
    )
    spec = from_hf_config(cfg9b, "tiny-qwen3.5")
    plain = weights_term(spec, PlanConfig(gpu="h100"))
    with_mtp = weights_term(spec, PlanConfig(gpu="h100", speculative_tokens=2))
    mtp_params = spec.param_breakdown.num_params(("mtp",))
    assert mtp_params > 0 and with_mtp.bytes - plain.bytes == 2 * mtp_params
    eagle = weights_term(spec, replace(PlanConfig(gpu="h100", speculative_tokens=2), draft_layers=1))
    assert eagle.bytes == plain.bytes


def test_header_bytes_leave_out_mtp_and_scale_to_the_rank() -> None:
    from hkv.model_specs.checkpoint_bytes import CheckpointBytes

    spec = from_hf_config(dict(CONFIG), "tiny")
    header = CheckpointBytes(
        1_000_000 + 50_000 + 7_000,
        (("language_model", 1_000_000), ("vision", 50_000), ("mtp", 7_000)),
        "local",
    )
    spec = replace(spec, checkpoint_bytes=header, weights_bytes_exact=header.total_bytes)
    rotary = 128 * 16 * 2
    # TP 1: language model + vision from the headers, MTP left out, + the rotary cache: exact
    one = weights_term(spec, PlanConfig(gpu="h100"))
    assert (one.bytes, one.source, one.is_exact) == (1_050_000 + rotary, "header", True)
    # towers off: the language model only
    assert weights_term(spec, PlanConfig(gpu="h100", language_model_only=True)).bytes == 1_000_000 + rotary
    # TP 4: scaled by the rank's share of the config computation (136,320 bytes of the whole model's)
    # whole model at TP 1: embed and lm_head 1,024 x 64 each (padded) + 4 x 30,848 + 64 = 254,528 elements
    share = 136_320 / (2 * 254_528)
    four = weights_term(spec, PlanConfig(gpu="h100", tp=4))
    assert four.source == "header" and four.bytes == -(-1_050_000 * share // 1) + rotary


def test_online_fp8_quantizes_the_linears_at_load() -> None:
    # TP 1 tiny Llama, --quantization fp8: each linear K x N bytes + one fp32 scale; embeddings and
    # lm_head stay bf16 (vLLM's ParallelLMHead is not quantized by fp8).
    # per layer linears: q 4,096 + k 2,048 + v 2,048 + o 4,096 + 3 x 6,144 = 30,720 bytes + 7 scales x 4 = 28
    # per layer norms 128 x 2 = 256. Four layers: 4 x (30,720 + 28 + 256) = 124,016
    # embed + lm_head 2 x 65,536 x 2 = 262,144; final norm 128; rotary 4,096
    spec = from_hf_config(dict(CONFIG), "tiny")
    term = weights_term(spec, PlanConfig(gpu="h100", quantization="fp8"))
    assert term.bytes == 124_016 + 262_144 + 128 + 4_096
