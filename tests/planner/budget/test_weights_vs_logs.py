"""hkv's weights term (config source: no safetensors at hand) against "Model loading took X GiB"
in real vLLM start-up logs (/work/shared/data/vllm_memory_logs/records.jsonl and
records_2026_11.jsonl, field weights_gib).

Tolerance: |hkv - logged| <= max(1 % of logged, 0.13 GiB). The log prints two decimals (+-0.005
GiB); the 0.13 GiB covers the largest allocation vLLM makes while loading that hkv does not model:
about 0.1-0.12 GiB on the 0.19-0.22 releases (Qwen2.5-7B, Qwen3.5-4B/9B, whose exact parameter
counts agree with the logs' own "Checkpoint size"), cause not found in vLLM's source. Every
logged value must also fall inside the term's band.

Not asserted (kept in NOT_ASSERTED with the reason): records whose config is a reconstruction
that misses what decides the bytes, or whose backend is unknown.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.budget.weights import weights_term
from hkv.planner.plan_config import PlanConfig

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "vllm_startups" / "configs"
GIB = 2**30


class Logged(NamedTuple):
    record: str
    config: str
    gpu: str
    tp: int
    weights_gib: float
    line: str  # where the figure is printed
    dtype: str = "auto"
    plan: tuple[tuple[str, object], ...] = ()  # further PlanConfig fields the record sets


RECORDS = (
    Logged(
        "r018_llmd_gptoss20b_h100",
        "gpt-oss-20b",
        "h100",
        1,
        13.47,
        "Model loading took: 13.47 GiB memory and 31.68 seconds (author's summary of the DEBUG log, v0.11)",
    ),
    Logged(
        "r019_llmd_gptoss120b_h100",
        "gpt-oss-120b",
        "h100",
        1,
        64.38,
        "author's summary table, v0.11: 64.38 GiB",
    ),
    Logged(
        "r020_llmd_llama33_70b_fp8_tp2_h100",
        "llama-3.3-70b-instruct-fp8-dynamic",
        "h100",
        2,
        33.88,
        "Model loading took: 33.88 GiB memory and 116.61 seconds",
    ),
    Logged(
        "r021_llmd_llama33_70b_fp8_tp1_h100_negative",
        "llama-3.3-70b-instruct-fp8-dynamic",
        "h100",
        1,
        67.72,
        "Model loading took: 67.72 GiB memory and 45.09 seconds",
    ),
    Logged(
        "r022_llmd_llama31_8b_h100",
        "llama-3.1-8b-instruct",
        "h100",
        1,
        14.99,
        "author's summary, v0.11: 14.99 GiB",
    ),
    Logged(
        "r008_llama31_8b_a100_v031",
        "llama-3.1-8b-instruct",
        "a100-80gb",
        1,
        15.0,
        "[gpu_model_runner.py] Model loading took 15.0 GiB (v0.31.0)",
    ),
    Logged("r023_llmd_qwen3_06b_h100", "qwen3-0.6b", "h100", 1, 1.12, "author's summary, v0.11: 1.12 GiB"),
    Logged(
        "r052_vllm24577_qwen3_06b_a100_flashinfer",
        "qwen3-0.6b",
        "a100-80gb",
        1,
        1.1201,
        "Model loading took 1.1201 GiB (~0.10.2)",
    ),
    Logged(
        "r024_llmd_qwen3_32b_tp1_h100", "qwen3-32b", "h100", 1, 61.03, "author's summary, v0.11: 61.03 GiB"
    ),
    Logged(
        "r025_llmd_qwen3_32b_tp2_h100", "qwen3-32b", "h100", 2, 30.59, "author's summary, v0.11: 30.59 GiB"
    ),
    Logged(
        "r031_qwen3_8b_fp8_24g_debug",
        "qwen3-8b-fp8",
        "rtx4090",
        1,
        8.8,
        "Model loading took 8.8 GiB (--dtype float16; 24 GB-class card)",
        "float16",
    ),
    Logged(
        "r001_qwen35_9b_l40s",
        "qwen3.5-9b",
        "l40s",
        1,
        17.66,
        "[gpu_model_runner.py:4820] Model loading took 17.66 GiB memory and 26.884630 seconds (v0.19.0)",
    ),
    Logged(
        "r005_qwen35_4b_v022_gmu05",
        "qwen3.5-4b",
        "l40s",
        1,
        8.61,
        "[gpu_model_runner.py:5132] Model loading took 8.61 GiB memory and 4.171419 seconds (v0.22.0)",
    ),
    Logged(
        "r002_qwen25_7b_v022",
        "qwen2.5-7b-instruct",
        "l40s",
        1,
        14.29,
        "[gpu_model_runner.py:5132] Model loading took 14.29 GiB memory and 4.660599 seconds (v0.22.0)",
    ),
    Logged(
        "r011_qwen25_05b_4090_wsl_v0271",
        "qwen2.5-0.5b-instruct",
        "rtx4090",
        1,
        0.93,
        "[model_runner.py:329] Model loading took 0.93 GiB and 2.078159 seconds (v0.27.1)",
    ),
    Logged(
        "r026_llmd_mistral_small32_h100",
        "mistral-small-3.2-24b-instruct-2506",
        "h100",
        1,
        44.76,
        "author's summary, v0.11 (Pixtral tower loaded): 44.76 GiB",
    ),
    Logged(
        "r048_vllm21489_gemma3_4b_b200_bench",
        "gemma-3-4b-it",
        "b200",
        1,
        8.58,
        "Actual usage is 8.58 GiB for weight, ... (SigLIP tower loaded)",
    ),
    Logged(
        "r003_qwen36_27b_nvfp4_spark",
        "nvidia-qwen3.6-27b-nvfp4",
        "gb10",
        1,
        19.78,
        "[gpu_model_runner.py:5255] Model loading took 19.78 GiB memory and 129.689615 seconds "
        "(GB10, compute capability 12.1; Marlin weight-only FP4 per the log)",
    ),
    Logged(
        "r010_qwen3next_80b_2xh200_v0102",
        "qwen3-next-80b-a3b-instruct",
        "h200",
        2,
        74.2812,
        "Model loading took 74.2812 GiB and ... seconds (v0.10.2)",
    ),
)

RECORDS += (
    Logged(
        "q001",
        "qwen3-235b-a22b-instruct-2507-fp8",
        "l40s",
        8,
        27.7183,
        "Model loading took 27.7183 GiB (v0.10.2, TP 8 + expert parallel; block FP8 checkpoint)",
    ),
    Logged(
        "q003",
        "thebloke-mistral-7b-instruct-v0.2-gptq",
        "gb10",
        1,
        3.8844,
        "Model loading took 3.8844 GiB (0.11.0+nv25.11; --quantization gptq forces the exllama kernel)",
        "float16",
        (("quantization", "gptq"),),
    ),
    Logged(
        "q004",
        "qwen2.5-7b-instruct-awq",
        "rtx4080",
        1,
        5.29,
        "author's transcription of the breakdown, v0.26.0: 5.29 GiB (awq_marlin); hkv 1.8 % low (0.09 GiB)",
    ),
    Logged(
        "q010",
        "granite-4.0-micro",
        "l40s",
        1,
        3.4244,
        "Model loading took 3.4244 GiB (v0.11.0, quantization='fp8' at load: per-tensor FP8)",
        plan=(("quantization", "fp8"),),
    ),
    Logged(
        "q029",
        "nvidia-qwen3.6-27b-nvfp4",
        "gb10",
        1,
        20.57,
        "Model loading took 20.57 GiB (0.23.1 dev, MTP drafter with 2 tokens loaded with the target)",
        plan=(("speculative_tokens", 2),),
    ),
    Logged(
        "r053_myoceane_gemma4_26b_a4b_a100_eager",
        "gemma-4-26b-a4b",
        "a100-80gb",
        1,
        48.5,
        "Model loading took 48.5 GiB (v0.19.0; gemma4_vision tower loaded)",
    ),
    Logged(
        "q013",
        "gemma-4-e2b",
        "l4",
        1,
        8.89,
        "Model loading took 8.89 GiB memory (0.21.0, --language-model-only: towers skipped; the per-layer "
        "embeddings, the K/V slots of the 20 KV-shared layers and the rotary caches at 256 / 512 are loaded)",
        plan=(("language_model_only", True), ("vllm_version", "0.21.0"), ("max_model_len", 8192)),
    ),
    Logged(
        "q015",
        "gemma-4-e2b-it-qat-w4a16-ct",
        "t4",
        1,
        8.02,
        "Model loading took 8.02 GiB memory and 88.981559 seconds (0.29.0, compressed-tensors W4A16 on "
        "Marlin, --dtype float16, vision and audio towers loaded)",
        "float16",
        (("vllm_version", "0.29.0"), ("max_num_seqs", 8), ("max_model_len", 16384)),
    ),
    Logged(
        "xbill9-t4-e2b-it-bf16",
        "gemma-4-e2b",
        "t4",
        1,
        9.8,
        "Model loading took 9.8 GiB memory and 157.183441 seconds (google/gemma-4-E2B-it, 0.29.0, --dtype "
        "float16, towers loaded: github:xbill9/sagemaker-gemma@6c18089f docs/articles/examples/"
        "4688459-gemma-4-on-a-tesla-t4-qat-weights-decode-1-79x-faster-than-b.md, the q015 article's "
        "bf16 twin; E2B-it has the base E2B's shapes)",
        "float16",
        (("vllm_version", "0.29.0"), ("max_num_seqs", 8), ("max_model_len", 16384)),
    ),
    Logged(
        "q012",
        "qwen3.8-27b",
        "rtx-pro-6000",
        1,
        51.1,
        "Model loading took 51.1 GiB memory and 12.582087 seconds (0.29.0, bf16, vision tower loaded)",
        "bfloat16",
        (("vllm_version", "0.29.0"), ("max_model_len", 8192), ("max_num_batched_tokens", 8192)),
    ),
    Logged(
        "r014_qwen36_35b_nvfp4_spark_v020",
        "redhatai-qwen3.6-35b-a3b-nvfp4",
        "gb10",
        1,
        21.86,
        "[gpu_model_runner.py:4879] Model loading took 21.86 GiB memory and 121.519687 seconds (0.20.0, "
        "compressed-tensors NVFP4 on GB10, vision tower loaded)",
        plan=(("vllm_version", "0.20.0"), ("max_model_len", 65536), ("max_num_batched_tokens", 8192)),
    ),
)

NOT_ASSERTED = {
    "r049_vllm51590_gptoss120b_tp8_pro4500_v028": (
        "author's table; hkv 8.63 GiB vs 9.98 (-13.5 %): what the 0.28 MXFP4 MoE backend "
        "allocates per rank on compute capability 12.0 at TP 8 (2880 / 8 = 360 intermediate per "
        "rank) is not known; hkv pads as Marlin (hidden 3072, intermediate 384)"),
    "q006 / q020": (
        "no weights figure logged (q006: the author's 'about 25.8 GiB incl. the profiling "
        "peak'; q020: SGLang's pools imply about 19.0 GiB under SGLang, not vLLM); hkv 15.12 / "
        "17.89 GiB"),
    "r027/r028 Qwen3.5-4B-AWQ": (
        "checkpoint not named: its modules_to_not_convert is unknown (3.23 vs 3.85 GiB logged for the "
        "same files on 0.18.0 / 0.17.1)"),
}


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: r.record)
def test_weights_term_matches_the_logged_load(rec: Logged) -> None:
    spec = from_hf_config(json.loads((CONFIGS / f"{rec.config}.json").read_text()), rec.config)
    term = weights_term(spec, PlanConfig(gpu=rec.gpu, tp=rec.tp, dtype=rec.dtype, **dict(rec.plan)))
    logged = rec.weights_gib * GIB
    assert abs(term.bytes - logged) <= max(0.01 * logged, 0.13 * GIB), (term.bytes / GIB, rec.weights_gib)
    assert term.low_bytes <= logged <= term.high_bytes
