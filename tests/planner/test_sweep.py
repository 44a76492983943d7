"""planner/sweep.py: the GPU x TP product of PlanConfigs, one plan each; rows that do not fit stay rows.

The toy Gemma-3-27B's weights are given per rank (PlanConfig.weights_bytes), so the fits below
follow by hand from the GPU totals and vLLM 0.32's default utilization of 0.92:

    H100: total int(79.18 GiB) = 85,018,877,624 B, requested ceil(x 0.92) = 78,217,367,415 B
    L4:   23,034 MiB - 0.5 GiB = 23,616,028,672 B, requested ceil(x 0.92) = 21,726,746,379 B
    weights 54e9 B per rank: more than the L4's whole request, less than the H100's.
"""

from dataclasses import replace
from math import ceil

import pytest
from toy_models import gemma3_27b

from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.planner.sweep import sweep, sweep_configs

BIG_GEMMA = gemma3_27b()
BASE = PlanConfig(max_model_len=8192)
HEAVY = replace(BASE, weights_bytes=54_000_000_000)

REQUESTED = {"h100": 78_217_367_415, "l4": 21_726_746_379}
EXPECTED_FITS = {("h100", 1): True, ("h100", 4): True, ("l4", 1): False, ("l4", 4): False}


def test_rows_are_gpu_major_and_carry_the_hand_computed_budgets():
    rows = sweep(BIG_GEMMA, HEAVY, ("h100", "l4"), (1, 4))
    assert [(r.gpu, r.tp) for r in rows] == list(EXPECTED_FITS)
    for row in rows:
        budget = row.plan.budget
        assert budget.requested_bytes == REQUESTED[row.gpu]
        assert budget.weights_bytes == 54_000_000_000
        assert row.fits == EXPECTED_FITS[row.gpu, row.tp]
        # the row's budget is its own config's: requested less every term, floored at 0
        rest = REQUESTED[row.gpu] - sum(t.bytes for t in budget.terms)
        assert (budget.available_bytes, budget.shortfall_bytes) == (max(rest, 0), max(-rest, 0))
        assert budget == compute_memory_budget(BIG_GEMMA, replace(HEAVY, gpu=row.gpu, tp=row.tp, block_size=16))
    assert ceil(85_018_877_624 * 0.92) == REQUESTED["h100"]


def test_a_row_that_does_not_fit_is_a_row_with_empty_pools():
    [row] = [r for r in sweep(BIG_GEMMA, HEAVY, ("l4",), (1, 4)) if r.tp == 1]
    assert not row.fits
    assert all(p.num_blocks == 0 for report in row.plan.reports.values() for p in report.layout.pools)


def test_each_row_equals_the_plan_of_its_own_config():
    rows = sweep(gemma3_27b(), BASE, ("h200", "h100-sxm"), (2, 1))
    for row, (gpu, tp) in zip(rows, [("h200", 2), ("h200", 1), ("h100", 2), ("h100", 1)], strict=True):
        assert row.plan == plan(gemma3_27b(), PlanConfig(gpu=gpu, tp=tp, max_model_len=8192))


def test_configs_keep_every_other_setting():
    base = PlanConfig(max_model_len=4096, block_size=32, concurrency=3, available_kv_memory_bytes=2**30)
    configs = sweep_configs(base, ("b200", "H100"), (1, 2, 8))
    assert [(c.gpu, c.tp) for c in configs] == [("b200", 1), ("b200", 2), ("b200", 8),
                                                ("h100", 1), ("h100", 2), ("h100", 8)]
    assert all(replace(c, gpu=base.gpu, tp=base.tp) == base for c in configs)


# (gpus, tps, base overrides, fragment of the InvalidInputError message, fields it names)
REFUSED = [
    (("h100", "h1000"), (1,), {}, "unknown GPU 'h1000'; did you mean h100", ("gpu_memory_bytes",)),
    (("h100", "h100-sxm"), (1,), {}, "gpu lists h100 more than once", ("gpu",)),
    (("h100",), (2, 4, 2), {}, "tp lists 2 more than once", ("tp",)),
    (("h100",), (1, 0), {}, "tp must be a positive integer, got 0", ("tp",)),
    (("h100", "h200"), (1,), {"gpu_memory_bytes": 80 * 2**30}, "gpu_memory_bytes gives every GPU the same memory",
     ("gpu_memory_bytes", "gpu")),
    ((), (1,), {}, "at least one gpu and one tp", ("gpu", "tp")),
]


@pytest.mark.parametrize("gpus, tps, overrides, fragment, fields", REFUSED)
def test_refused_lists_name_the_problem(gpus, tps, overrides, fragment, fields):
    with pytest.raises(InvalidInputError) as err:
        sweep_configs(replace(BASE, **overrides), gpus, tps)
    assert fragment in str(err.value) and err.value.fields == fields


def test_one_memory_size_may_still_sweep_tp():
    configs = sweep_configs(replace(BASE, gpu_memory_bytes=80 * 2**30), ("h100",), (1, 2))
    assert [c.tp for c in configs] == [1, 2]
