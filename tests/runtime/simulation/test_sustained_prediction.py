"""The planner's sustained prediction (planner/capacity/sustained.py, pure arithmetic) against the
runtime's measurement (real scheduler and pools): equal on every tiny layout and catalog plan
below, and a deliberately wrong model is caught."""

import itertools

import pytest
from rt_layouts import CHUNKED, FULL, RECURRENT, SLIDING, make_group, make_layout

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.capacity import sustained, sustained_counts
from hkv.planner.layout import cdiv
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.planner.capacity.sustained import SustainedSetup, predict_sustained
from hkv.runtime.simulation.sustained_probe import measure_sustained

MIB = 2**20

GROUP_SETS = {
    "full": lambda b: [make_group(FULL, b)],
    "sliding": lambda b: [make_group(SLIDING, b, window=5)],
    "full+sliding": lambda b: [make_group(FULL, b), make_group(SLIDING, b, window=8)],
    "full+2 sliding": lambda b: [make_group(FULL, b), make_group(SLIDING, b, window=3),
                                 make_group(SLIDING, b, window=3)],
    "full+chunked": lambda b: [make_group(FULL, b), make_group(CHUNKED, b, chunk=8)],
    "full+mamba(1)": lambda b: [make_group(FULL, b), make_group(RECURRENT, b, num_state_blocks=1)],
    "full+mamba(3)": lambda b: [make_group(FULL, b), make_group(RECURRENT, b, num_state_blocks=3)],
    "two pools": lambda b: [make_group(FULL, b), make_group(SLIDING, b, window=6, pool_id=1)],
}


def tiny_cases():
    for (name, groups), block, pool_blocks, max_len, budget, output_len in itertools.product(
            GROUP_SETS.items(), (2, 4), (9, 17, 30), (16, 24), (6, 64), (None, 3, 12)):
        pools = [pool_blocks, pool_blocks // 2] if name == "two pools" else [pool_blocks]
        yield (name, block, tuple(pools), max_len, budget, output_len)


def tiny(name, block, pools, max_len, budget):
    return make_layout(GROUP_SETS[name](block), list(pools), max_model_len=max_len, in_flight_tokens=2 * budget)


@pytest.mark.parametrize("case", list(tiny_cases()), ids=str)
def test_prediction_equals_measurement_on_tiny_layouts(case):
    name, block, pools, max_len, budget, output_len = case
    layout = tiny(name, block, pools, max_len, budget)
    setup = SustainedSetup(max_num_batched_tokens=budget, max_num_seqs=32, output_len=output_len)
    assert predict_sustained(layout, setup) == measure_sustained(layout, setup).sustained


CATALOG = [  # (model, max_model_len, KV budget): small budgets keep N (and the test) small
    ("gemma-3-27b-it", 4096, 8192 * MIB),
    ("gpt-oss-20b", 8192, 3072 * MIB),
    ("llama-4-scout-17b-16e-instruct", 16384, 16384 * MIB),
    ("qwen3-next-80b-a3b", 8192, 3072 * MIB),
    ("nemotron-h-8b-base-8k", 8192, 3072 * MIB),
    ("gemma-3n-e4b", 4096, 1024 * MIB),
]


@pytest.mark.parametrize("model,max_len,kv_bytes", CATALOG)
def test_prediction_equals_measurement_on_catalog_plans(model, max_len, kv_bytes):
    cfg = PlanConfig(max_model_len=max_len, available_kv_memory_bytes=kv_bytes, max_num_batched_tokens=2048)
    result = plan(load_model_spec(model), cfg)
    setup = SustainedSetup(max_num_batched_tokens=2048, max_num_seqs=result.budget.max_num_seqs)
    for name, report in result.reports.items():
        predicted = predict_sustained(report.layout, setup)
        measured = measure_sustained(report.layout, setup).sustained
        assert predicted == measured, f"{model} {name}: predicted {predicted}, measured {measured}"
        assert measured >= report.layout.max_num_requests(max_len)  # the gate is a lower bound


def test_the_first_decode_step_after_prefill_is_walked():
    # Regression: Gemma-3-27B's hkv layout on an H100 at 8k (31 groups of 2, T = 8,192). The
    # first decode step releases each request's last prefill window in turn while earlier ones
    # grow; skipping it with the steady decodes released everything at once and predicted 17
    # where the scheduler preempts at 17 (measured 16).
    cfg = PlanConfig(gpu="h100", max_model_len=8192)
    result = plan(load_model_spec("gemma-3-27b-it"), cfg)
    setup = SustainedSetup(max_num_batched_tokens=result.budget.max_num_batched_tokens,
                           max_num_seqs=result.budget.max_num_seqs)
    for name in ("hkv", "vllm"):
        layout = result.reports[name].layout
        assert predict_sustained(layout, setup) == measure_sustained(layout, setup).sustained, name


def _window_off_by_one(g, c, t):
    window = g.spec.window_len + 1  # keeps one token too many
    return cdiv(t, g.block_size) - max(0, c - window + 1) // g.block_size


def test_an_off_by_one_window_is_caught(monkeypatch):
    monkeypatch.setitem(sustained_counts._HELD, SLIDING, _window_off_by_one)
    mismatches = []
    for name, block, pools, max_len, budget, output_len in tiny_cases():
        if "sliding" not in name:
            continue
        layout = tiny(name, block, pools, max_len, budget)
        setup = SustainedSetup(max_num_batched_tokens=budget, max_num_seqs=32, output_len=output_len)
        if predict_sustained(layout, setup) != measure_sustained(layout, setup).sustained:
            mismatches.append(name)
    assert mismatches  # the comparison fails for a wrong model


def test_the_search_equals_the_ramp_on_the_tiny_grid():
    # The gallop and bisection assume cleanness is monotone; on every tiny case they find the
    # same N as walking up one by one from 1.
    for name, block, pools, max_len, budget, output_len in tiny_cases():
        layout = tiny(name, block, pools, max_len, budget)
        setup = SustainedSetup(max_num_batched_tokens=budget, max_num_seqs=32, output_len=output_len)
        ramp = sustained.ramp_clean(32, lambda n: sustained.runs_clean(layout, n, setup))
        assert predict_sustained(layout, setup) == ramp, (name, block, pools, max_len, budget, output_len)
