"""Every catalog model on every GPU plans, serializes and renders; hkv never wastes more than vLLM."""

import io
import json
from math import ceil

import pytest
from rich.console import Console

from hkv.cli.render_plan import render_plan
from hkv.model_specs.catalog import catalog_names
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.gpu_table import GPUS
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.planner.plan_json import plan_to_dict

MODELS = {name: load_model_spec(name) for name in catalog_names()}


# vLLM's `vllm serve` max_num_batched_tokens by device class (vllm-hybrid-kv.md 2.3, "Default
# max_num_batched_tokens"): >= 160 GiB 16,384; >= 70 GiB and not an A100 8,192; else 2,048.
# Device memory from the vendors' spec sheets: B200 192 GB, GB200 186 GB, MI300X 192 GB, MI325X
# 256 GB, MI355X 288 GB (>= 160 GiB); H100 80 GB, H100 NVL 94 GB, H200 141 GB (70..160 GiB); A100
# 40/80 GB (A100), L40S 48 GB, L4 24 GB, A10G 24 GB, RTX 4090 24 GB, RTX 5090 32 GB (< 70 GiB).
DEFAULT_MNBT = {
    "b200": 16384, "gb200": 16384, "mi300x": 16384, "mi325x": 16384, "mi355x": 16384,
    "h100": 8192, "h100-pcie": 8192, "h100-nvl": 8192, "h200": 8192, "rtx-pro-6000": 8192,
    "a100-40gb": 2048, "a100-80gb": 2048, "l40s": 2048, "l4": 2048, "a10g": 2048, "rtx4080": 2048,
    "rtx4090": 2048,
    "rtx5090": 2048, "a10": 2048, "a40": 2048, "rtx-a6000": 2048, "rtx3090": 2048, "rtx-pro-4500": 2048,
    "t4": 2048,
    "gb10": 2048,  # 119.63 GiB, but vLLM 0.33 (the default release) keeps compute capability 12.1 small
}
# vLLM's default max_num_seqs (EngineArgs.get_batch_defaults): 1,024 from 70 GiB up except the A100.
DEFAULT_MAX_NUM_SEQS = {name: 1024 if mnbt >= 8192 else 256 for name, mnbt in DEFAULT_MNBT.items()}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_gpu_plans_in_both_formats(name):
    assert sorted(DEFAULT_MNBT) == sorted(gpu.name for gpu in GPUS)
    for gpu in GPUS:
        assert compute_memory_budget(MODELS[name], PlanConfig(gpu=gpu.name)).max_num_seqs == \
            DEFAULT_MAX_NUM_SEQS[gpu.name], gpu.name
        # 256 sequences: the sustained search at 1,024 takes seconds a plan (benchmarks, not tests)
        result = plan(MODELS[name], PlanConfig(gpu=gpu.name, max_num_seqs=256))
        budget = result.budget
        # 2.1: available = ceil(total x utilization) - weights - activations - cudagraphs - non-torch,
        # floored at 0 with the rest reported as the shortfall; vLLM's default utilization is 0.92.
        rest = (ceil(budget.total_bytes * 0.92) - budget.weights_bytes - budget.activation_bytes
                - budget.cudagraph_bytes - budget.non_torch_bytes)
        assert (budget.available_bytes, budget.shortfall_bytes) == (max(rest, 0), max(-rest, 0)), gpu.name
        assert budget.max_num_batched_tokens == DEFAULT_MNBT[gpu.name], gpu.name
        vllm = result.reports["vllm"].layout
        # 2.3: async scheduling, T = 2 x max_num_batched_tokens; 2.2: num_blocks = available // bytes/block
        assert vllm.in_flight_tokens == 2 * DEFAULT_MNBT[gpu.name]
        [pool] = vllm.pools
        assert pool.num_blocks == budget.available_bytes // pool.bytes_per_block, gpu.name
        if budget.fits:  # no layout spends more than the budget (tiny budgets: the test below)
            for layout_name, report in result.reports.items():
                used_bytes = sum(p.num_bytes for p in report.layout.pools)
                assert used_bytes <= budget.available_bytes, (gpu.name, layout_name)
        as_dict = plan_to_dict(result)
        assert json.loads(json.dumps(as_dict, allow_nan=False)) == as_dict  # JSON-native, lossless
        out = io.StringIO()
        render_plan(result, Console(file=out, width=120))
        text = out.getvalue()
        assert name in text and f"{vllm.max_model_len:,} tokens per request" in text
        for line in result.reports["vllm"].log_lines:
            assert line in text, gpu.name


# Regression: split_pools used to hand every pool its null block before checking the budget, so
# the hkv and partitioned layouts' state pool got 77,322,240 B out of a budget of 0 B or 50 MiB.
@pytest.mark.parametrize("options", [
    # granite-4.0-h-small on an L4: about 64 GB of bf16 weights against 24 GB: available = 0.
    {"gpu": "l4"},
    # 50 MiB = 52,428,800 B < one state block (36 x 2,147,840 = 77,322,240 B).
    {"available_kv_memory_bytes": 50 * 2**20},
], ids=["does-not-fit", "50MiB"])
def test_no_layout_spends_more_than_a_tiny_budget(options):
    result = plan(MODELS["granite-4.0-h-small"], PlanConfig(**options))
    assert result.budget.available_bytes < 77_322_240
    for name, report in result.reports.items():
        used_bytes = sum(p.num_bytes for p in report.layout.pools)
        assert used_bytes <= result.budget.available_bytes, name


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("max_len", [4096, None])
def test_hkv_never_wastes_more_than_vllm(name, max_len):
    if max_len is not None:
        max_len = min(max_len, MODELS[name].max_model_len)  # Falcon-40B: 2,048 positions
    result = plan(MODELS[name], PlanConfig(available_kv_memory_bytes=40 * 2**30, max_model_len=max_len))
    hkv, vllm = result.reports["hkv"], result.reports["vllm"]
    if vllm.capacity.max_num_requests == 0:
        # not even one request of max_model_len fits (MiniMax-M1: 10M tokens): waste per request
        # of that length is moot; compare the longest request that does fit instead.
        assert hkv.capacity.max_context_len >= vllm.capacity.max_context_len
        return
    assert hkv.waste_fraction <= vllm.waste_fraction + 1e-9
    assert hkv.capacity.max_num_requests >= vllm.capacity.max_num_requests
    if vllm.layout.padding_slots() > 0 and max_len is None:
        assert hkv.waste_fraction < vllm.waste_fraction


def test_gemma3_27b_catalog_matches_the_design_example():
    result = plan(MODELS["gemma-3-27b-it"], PlanConfig(available_kv_memory_bytes=10 * 2**30))
    vllm = result.reports["vllm"].layout
    assert [g.num_layers for g in vllm.groups] == [9, 9, 9, 9, 8, 8, 10]
    assert vllm.padding_slots() == 8 and vllm.pools[0].bytes_per_block == 1_310_720


def test_legacy_kv_cache_tokens_equal_the_legacy_line():
    # Llama-4-Scout on h100 needs --tp 8 to fit. vLLM layout: 4 groups of 12 layers (3 chunked,
    # 1 full), block size 16. Legacy "KV cache size" = num_blocks // 4 groups x 16 tokens; the
    # JSON figure must be that number, not int(concurrency x max_model_len).
    cfg = PlanConfig(gpu="h100", tp=8, vllm_log="legacy")
    report = plan(MODELS["llama-4-scout-17b-16e-instruct"], cfg).reports["vllm"]
    num_blocks = report.layout.pools[0].num_blocks
    assert [g.num_layers for g in report.layout.groups] == [12, 12, 12, 12]
    legacy_tokens = num_blocks // 4 * 16
    assert report.capacity.kv_cache_tokens == legacy_tokens
    assert report.log_lines[0] == f"GPU KV cache size: {legacy_tokens:,} tokens"
    assert plan_to_dict(plan(MODELS["llama-4-scout-17b-16e-instruct"], cfg))["layouts"]["vllm"][
        "capacity"]["kv_cache_tokens"] == legacy_tokens
