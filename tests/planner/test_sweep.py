"""planner/sweep.py: the GPU x TP product of PlanConfigs, one plan each; rows that do not fit stay rows.

The budgets below are derived by hand from the toy Gemma-3-27B (hidden 1,024, intermediate 4,096,
vocab 1,000, bf16) given 27e9 parameters, so that it is too big for one L4:

    weights = 27e9 x 2 B = 54,000,000,000 B, split over TP ranks (ceil)
    activation = mnbt x (4 x 1,024 + 2 x 4,096 // tp) x 2 + min(mnbt, 256) x 1,000 x 4
    overhead = cudagraphs 536,870,912 + non-torch int(0.4 GiB) = 429,496,729
    H100: total 84,943,715,696 (79.11 GiB), requested ceil(x 0.9) = 76,449,344,127, mnbt 8,192
    L4:   total 23,034 MiB - 0.5 GiB = 23,616,028,672, requested 21,254,425,805, mnbt 2,048
"""

from dataclasses import replace

import pytest
from toy_models import gemma3_27b

from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.planner.sweep import sweep, sweep_configs

BIG_GEMMA = replace(gemma3_27b(), num_params=27_000_000_000)
BASE = PlanConfig(max_model_len=8192)

# (gpu, tp) -> (fits, available_bytes, shortfall_bytes)
EXPECTED_BUDGETS = {
    # 76,449,344,127 - 54e9 - (8,192 x 12,288 x 2 + 1,024,000 = 202,350,592) - 536,870,912 - 429,496,729
    ("h100", 1): (True, 21_280_625_894, 0),
    # 76,449,344,127 - 13.5e9 - (8,192 x 6,144 x 2 + 1,024,000 = 101,687,296) - 536,870,912 - 429,496,729
    ("h100", 4): (True, 61_881_289_190, 0),
    # 54e9 + (2,048 x 12,288 x 2 + 1,024,000 = 51,355,648) + 966,367,641 - 21,254,425,805
    ("l4", 1): (False, 0, 33_763_297_484),
    # 21,254,425,805 - 13.5e9 - (2,048 x 6,144 x 2 + 1,024,000 = 26,189,824) - 966,367,641
    ("l4", 4): (True, 6_761_868_340, 0),
}


def test_rows_are_gpu_major_and_carry_the_hand_computed_budgets():
    rows = sweep(BIG_GEMMA, BASE, ("h100", "l4"), (1, 4))
    assert [(r.gpu, r.tp) for r in rows] == list(EXPECTED_BUDGETS)
    for row in rows:
        budget = row.plan.budget
        assert (row.fits, budget.available_bytes, budget.shortfall_bytes) == EXPECTED_BUDGETS[row.gpu, row.tp]


def test_a_row_that_does_not_fit_is_a_row_with_empty_pools():
    [row] = [r for r in sweep(BIG_GEMMA, BASE, ("l4",), (1, 4)) if r.tp == 1]
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
