"""probe_capacity on the real pools equals Layout.max_num_requests for every layout shape."""

from __future__ import annotations

import pytest
from hkv.planner.layout import Layout
from hkv.runtime import probe_capacity
from rt_layouts import CHUNKED, FULL, RECURRENT, SLIDING, make_group, make_layout


def layouts() -> list[tuple[str, Layout]]:
    return [
        ("full, one pool", make_layout([make_group(FULL, 4)], [23], max_model_len=32)),
        ("full + sliding, one pool", make_layout(
            [make_group(FULL, 2), make_group(SLIDING, 4, window=5)], [50], max_model_len=40,
            in_flight_tokens=6)),
        ("two sliding + full", make_layout(
            [make_group(SLIDING, 2, window=3), make_group(SLIDING, 2, window=3), make_group(FULL, 2)],
            [61], max_model_len=24, in_flight_tokens=4)),
        ("full + recurrent, separate pools", make_layout(
            [make_group(FULL, 4, pool_id=0), make_group(RECURRENT, 4, pool_id=1, num_state_blocks=3)],
            [40, 10], max_model_len=32)),
        ("chunked + full + sliding over two pools", make_layout(
            [make_group(CHUNKED, 4, chunk=8, pool_id=0), make_group(FULL, 4, pool_id=0),
             make_group(SLIDING, 2, window=6, pool_id=1)], [33, 17], max_model_len=36, in_flight_tokens=5)),
        ("recurrent only", make_layout([make_group(RECURRENT, 8, num_state_blocks=1)], [7],
                                       max_model_len=64)),
        ("too small for one", make_layout([make_group(FULL, 4)], [5], max_model_len=32)),
        ("null block only", make_layout([make_group(FULL, 4)], [1], max_model_len=32)),
    ]


@pytest.mark.parametrize(("name", "layout"), layouts(), ids=[name for name, _ in layouts()])
@pytest.mark.parametrize("seq_len", [1, 7, 16, 24])
def test_probe_equals_layout_formula(name: str, layout: Layout, seq_len: int) -> None:
    assert probe_capacity(layout, seq_len) == layout.max_num_requests(seq_len)


def test_hand_computed_counts() -> None:
    # A 32-token request holds cdiv(32, 4) = 8 blocks. 23 blocks = 22 usable: 2 fit; 25 blocks =
    # 24 usable: 3 fit (the null block never counts).
    assert probe_capacity(make_layout([make_group(FULL, 4)], [23], max_model_len=32), 32) == 2
    assert probe_capacity(make_layout([make_group(FULL, 4)], [25], max_model_len=32), 32) == 3
    # Separate pools: full needs 8 of 39 usable (4 fit), recurrent 3 of 9 (3 fit): the minimum.
    two_pools = make_layout([make_group(FULL, 4, pool_id=0), make_group(RECURRENT, 4, pool_id=1,
                                                                        num_state_blocks=3)],
                            [40, 10], max_model_len=32)
    assert probe_capacity(two_pools, 32) == 3


def test_probe_on_planner_layouts() -> None:
    """Optional: real layouts from the planner (skipped where its API is not there)."""
    try:
        from hkv.model_specs import load_model_spec
        from hkv.planner.plan import plan
        from hkv.planner.plan_config import PlanConfig
    except ImportError as err:
        pytest.skip(f"planner API not available: {err}")
    try:
        reports = [r for name in ("gemma-3-27b-it", "granite-4.0-h-small", "gpt-oss-20b")
                   for r in plan(load_model_spec(name), PlanConfig(max_model_len=8192)).reports.values()]
    except Exception as err:  # the planner is developed concurrently
        pytest.skip(f"planner failed: {err!r}")
    assert reports
    for report in reports:
        layout = report.layout
        assert probe_capacity(layout, layout.max_model_len) == layout.max_num_requests(layout.max_model_len)
