"""vLLM's start-up verdicts against its own code and a public log.

Texts: vllm/config/compilation.py resolve_cudagraph_mode_and_sizes (0.20.0-0.33.0) and
vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory (0.18.0-0.21.0 "models's", 0.22.0+
with the CPU clause; 0.33.0 kv_cache_planning.py), as read from the wheels (planner/startup docstrings).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.planner.startup import vllm_startup

GIB = 2**30
# Qwen3.8-27B (64 layers: 16 full attention x 4 KV heads x 256, 48 Gated DeltaNet): vLLM groups 16
# layers (48 > 1.5 x 16), so 4 groups of 16 slots; attention block 784 tokens (q012's log) ->
# 2 (K, V) x 784 x 4 x 256 x 2 B = 3,211,264 B a slot, x 16 slots = 51,380,224 B a block.
QWEN38_BLOCK = 16 * 2 * 784 * 4 * 256 * 2
# Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token; block 16 on
# sm90 -> 2,097,152 B (2 MiB) a block; 131,072 tokens = 8,192 blocks = 16.0 GiB.
LLAMA_BLOCK = 131_072 * 16


def verdict(model: str, **cfg):
    return vllm_startup(plan(load_model_spec(model), PlanConfig(**cfg)))


def codes(issues):
    return [i.code for i in issues]


def test_q012_log_max_num_seqs_exceeds_mamba_blocks():
    # records_2026_11.jsonl q012: vLLM 0.29.0, RTX PRO 6000, --max-model-len 8192, 0.9, default
    # max_num_seqs 1024: "ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (635)"
    # (vllm/config/compilation.py:1513). 635 blocks = 635 x 51,380,224 B = 32,626,442,240 B of KV memory.
    assert QWEN38_BLOCK == 51_380_224
    v = verdict("qwen3.8-27b", gpu="rtx-pro-6000", vllm_version="0.29.0", max_model_len=8192,
                gpu_memory_utilization=0.9, available_kv_memory_bytes=635 * QWEN38_BLOCK)
    assert not v.starts and codes(v.errors) == ["max_num_seqs_exceeds_mamba_blocks"]
    assert v.errors[0].message == (
        "max_num_seqs (1024) exceeds available Mamba cache blocks (635). Each decode sequence requires one Mamba "
        "cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most 635 or increase "
        "gpu_memory_utilization.")
    assert v.errors[0].fix == "--max-num-seqs <= 635"  # a given budget has no utilization to raise
    # the author's working run: --max-num-seqs 256 beside 652 blocks starts
    ok = verdict("qwen3.8-27b", gpu="rtx-pro-6000", vllm_version="0.29.0", max_model_len=8192,
                 gpu_memory_utilization=0.9, max_num_seqs=256, available_kv_memory_bytes=652 * QWEN38_BLOCK)
    assert ok.starts and ok.errors == ()


@pytest.mark.parametrize("max_num_seqs, version, eager, raises", [
    (1024, "0.33.0", False, True),
    (636, "0.29.0", False, True),   # one more sequence than blocks
    (635, "0.29.0", False, False),  # deliberately at the block count: vLLM's check is max_num_seqs > num_blocks
    (100, "0.29.0", False, False),
    (1024, "0.29.0", True, False),  # --enforce-eager: no full CUDA graphs, no check
    (1024, "0.20.0", False, True),  # the first release that raises
    (1024, "0.19.1", False, False),  # 0.18.0-0.19.1 cap the capture sizes instead
])
def test_mamba_check_table(max_num_seqs, version, eager, raises):
    v = verdict("qwen3.8-27b", gpu="rtx-pro-6000", vllm_version=version, max_model_len=8192,
                max_num_seqs=max_num_seqs, enforce_eager=eager, available_kv_memory_bytes=635 * QWEN38_BLOCK)
    assert ("max_num_seqs_exceeds_mamba_blocks" in codes(v.errors)) is raises


def test_mamba_check_spares_attention_only_models():
    v = verdict("llama-3.1-8b-instruct", gpu="h100", max_model_len=8192, available_kv_memory_bytes=600 * LLAMA_BLOCK)
    # 600 blocks beside 1,024 sequences: no state layer, no check (8,192 tokens need 512 + the null block)
    assert v.starts and v.errors == ()


def test_estimated_plan_fix_clears_the_mamba_error():
    # nemotron-3-nano-30b-a3b on an H100 at 32,768: the plan's pool is short of 1,024 blocks; both
    # fixes it names, re-planned, start.
    cfg = PlanConfig(gpu="h100", max_model_len=32768)
    model = load_model_spec("nemotron-3-nano-30b-a3b")
    p = plan(model, cfg)
    blocks = p.reports["vllm"].layout.pools[0].num_blocks
    error = vllm_startup(p).errors[0]
    assert blocks < 1024 and error.message.startswith(f"max_num_seqs (1024) exceeds available Mamba cache blocks "
                                                      f"({blocks}).")
    by_seqs, by_util = error.fix.split(" or ")
    assert by_seqs == f"--max-num-seqs <= {blocks}"
    assert vllm_startup(plan(model, replace(cfg, max_num_seqs=blocks))).starts
    util = float(by_util.removeprefix("--gpu-memory-utilization >= "))
    assert vllm_startup(plan(model, replace(cfg, gpu_memory_utilization=util))).starts
    assert not vllm_startup(plan(model, replace(cfg, gpu_memory_utilization=round(util - 0.01, 2)))).starts


LLAMA_TOO_LONG = ("To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, "
                  "which is larger than the available KV cache memory ({available} GiB). Based on the available "
                  "memory, the estimated maximum model length is {n}. Try increasing `gpu_memory_utilization` "
                  "(which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when "
                  "initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ "
                  "for more details.")


@pytest.mark.parametrize("version, text", [
    # 0.32.0+: the null block is held back: 10 GiB - 2 MiB = 5,119 blocks -> 5,119 x 16 = 81,904 tokens;
    # format_gib(10 GiB - 2 MiB) = round(9.998, 2) = 10.0
    ("0.33.0", LLAMA_TOO_LONG.format(available="10.0", n=81904)),
    ("0.32.0", LLAMA_TOO_LONG.format(available="10.0", n=81904)),
    # 0.22.0-0.31.0: all of it: 5,120 blocks -> 81,920 tokens
    ("0.25.0", LLAMA_TOO_LONG.format(available="10.0", n=81920)),
    # 0.18.0-0.21.0: "models's", no CPU clause
    ("0.21.0", "To serve at least one request with the models's max seq len (131072), (16.0 GiB KV cache is needed, "
               "which is larger than the available KV cache memory (10.0 GiB). Based on the available memory, the "
               "estimated maximum model length is 81920. Try increasing `gpu_memory_utilization` or decreasing "
               "`max_model_len` when initializing the engine. See "
               "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."),
])
def test_max_model_len_check_by_hand(version, text):
    v = verdict("llama-3.1-8b-instruct", gpu="h100", vllm_version=version, max_model_len=131072,
                available_kv_memory_bytes=10 * GIB)
    assert codes(v.errors) == ["max_model_len_exceeds_kv_memory"] and v.errors[0].message == text
    assert v.errors[0].fix.startswith(f"--max-model-len <= {text.split('length is ')[1].split('.')[0]} or ")


@pytest.mark.parametrize("blocks, starts", [(8192, False), (8193, True)])
def test_max_model_len_boundary_holds_back_the_null_block(blocks, starts):
    # 0.33.0: 8,192 blocks for one request need 8,193 (the null block); 0.31.0 starts at 8,192
    v = verdict("llama-3.1-8b-instruct", gpu="h100", max_model_len=131072, available_kv_memory_bytes=blocks * LLAMA_BLOCK)
    assert v.starts is starts
    assert verdict("llama-3.1-8b-instruct", gpu="h100", vllm_version="0.31.0", max_model_len=131072,
                   available_kv_memory_bytes=8192 * LLAMA_BLOCK).starts


def test_no_kv_memory_when_the_budget_does_not_fit():
    # 16 GiB of weights on a 16 GiB card: nothing is left ("does not fit"); the list ends there
    v = verdict("llama-3.1-8b-instruct", gpu=None, gpu_memory_bytes=16 * GIB, weights_bytes=16 * GIB)
    assert codes(v.errors) == ["no_kv_memory"]
    assert v.errors[0].message == (
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the "
        "engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
    assert v.errors[0].fix is None  # given weights stay 16 GiB a rank at any --tp
    # gemma-3-27b's 51 GiB of weights on an L4 (21.99 GiB): no utilization leaves room; more GPUs do
    l4 = verdict("gemma-3-27b", gpu="l4", max_model_len=8192)
    assert codes(l4.errors) == ["no_kv_memory"] and l4.errors[0].fix.startswith("--tp >= ")
    tp = int(l4.errors[0].fix.removeprefix("--tp >= "))
    assert tp == 4 and verdict("gemma-3-27b", gpu="l4", max_model_len=8192, tp=tp).starts


def test_warnings_prefix_caching_and_block():
    # Qwen3.8 at 0.29.0: prefix caching on (hybrids from 0.26.0), blocks raised to 784 tokens
    v = verdict("qwen3.8-27b", gpu="rtx-pro-6000", vllm_version="0.29.0", max_model_len=8192, max_num_seqs=256)
    block = next(w for w in v.warnings if w.code == "prefix_cache_block")
    assert "784 tokens" in block.message and "fewer than 785 tokens" in block.detail
    # 0.25.0: off by default for hybrids; the user's --no-prefix-caching is no warning
    old = verdict("qwen3.8-27b", gpu="rtx-pro-6000", vllm_version="0.25.0", max_model_len=8192, max_num_seqs=256)
    assert "prefix_caching_off" in codes(old.warnings) and "prefix_cache_block" not in codes(old.warnings)
    chosen = verdict("qwen3.8-27b", gpu="rtx-pro-6000", vllm_version="0.25.0", max_model_len=8192, max_num_seqs=256,
                     enable_prefix_caching=False)
    assert "prefix_caching_off" not in codes(chosen.warnings)


def test_cudagraph_share_line_is_vllms():
    # at 0.85 the graph estimate (2.2 GiB) takes about a fifth of what is left for the KV cache
    v = verdict("gemma-3-27b", gpu="h100", max_model_len=32768, gpu_memory_utilization=0.85)
    graph = next(w for w in v.warnings if w.code == "cudagraph_share")
    assert graph.message.startswith("CUDA graph memory profiling is enabled (default since v0.21.0). The current "
                                    "--gpu-memory-utilization=0.8500 is equivalent to --gpu-memory-utilization=0.")
    assert graph.fix.endswith("--enforce-eager")
    eager = verdict("gemma-3-27b", gpu="h100", max_model_len=32768, gpu_memory_utilization=0.85, enforce_eager=True)
    assert "cudagraph_share" not in codes(eager.warnings)
