"""Capacity bands and the fit verdict: an estimated budget's figures at both ends of its band.

The band's ends are checked against plans given those ends as exact budgets (the
--available-kv-memory path, which builds no band), and the bounded sustained search against an
unbounded one.
"""

from dataclasses import replace

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.memory_budget import MemoryBudget
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

GIB = 2**30


@pytest.mark.parametrize("model, cfg", [
    ("gemma-3-27b", PlanConfig(gpu="h100", max_model_len=32768, max_num_seqs=64)),
    ("qwen3-next-80b-a3b", PlanConfig(gpu="h200", tp=2, max_model_len=65536, max_num_seqs=64)),
])
def test_band_ends_equal_plans_of_those_budgets(model, cfg):
    spec = load_model_spec(model)
    estimated = plan(spec, cfg)
    low, high = estimated.budget.available_band
    assert low < estimated.budget.available_bytes < high
    for name, band in estimated.bands.items():
        for end, available in ((0, low), (1, high)):
            exact = plan(spec, replace(cfg, available_kv_memory_bytes=available))
            assert exact.bands == {}  # a given budget has no band
            capacity = exact.reports[name].capacity
            assert band.kv_cache_tokens[end] == capacity.kv_cache_tokens, (name, end)
            assert band.logged_concurrency[end] == capacity.logged_concurrency, (name, end)
            if band.sustained_concurrency is not None:  # searched with bounds; the exact plan searches all
                assert band.sustained_concurrency[end] == capacity.sustained_concurrency, (name, end)
        center = estimated.reports[name].capacity
        assert band.kv_cache_tokens[0] <= center.kv_cache_tokens <= band.kv_cache_tokens[1]
    assert estimated.bands[cfg.primary_layout].sustained_concurrency is not None


def _budget(available: int, low: int, high: int, *, exact: bool = False, shortfall: int = 0) -> MemoryBudget:
    return MemoryBudget("h100", 80 * GIB, 0.92, 60 * GIB, GIB, GIB, GIB, available, 8192, exact,
                        shortfall_bytes=shortfall, available_low_bytes=low, available_high_bytes=high)


@pytest.mark.parametrize("budget, verdict", [
    (_budget(10 * GIB, 8 * GIB, 12 * GIB), "fits"),
    (_budget(2 * GIB, 0, 5 * GIB), "may not fit"),  # the band's low end is short
    (_budget(0, 0, 5 * GIB, shortfall=GIB), "may not fit"),  # the estimate is short, the high end is not
    (_budget(0, 0, 0, shortfall=3 * GIB), "does not fit"),  # short even at the high end
    (_budget(0, 0, 0, exact=True, shortfall=GIB), "does not fit"),
    (_budget(4 * GIB, 4 * GIB, 4 * GIB, exact=True), "fits"),
])
def test_fit_verdict_reads_the_band(budget, verdict):
    assert budget.fit_verdict == verdict
