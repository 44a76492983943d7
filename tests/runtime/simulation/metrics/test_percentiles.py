"""Nearest-rank percentiles on samples small enough to rank by hand."""

from hkv.runtime.simulation.metrics.percentiles import Percentiles, percentiles_of


def test_four_values_rank_by_ceiling() -> None:
    # ranks ceil(0.5 x 4) = 2, ceil(0.9 x 4) = 4, ceil(0.99 x 4) = 4 of [1, 2, 3, 4]
    assert percentiles_of([4.0, 1.0, 3.0, 2.0]) == Percentiles(4, 2.5, 2.0, 4.0, 4.0, 4.0)


def test_one_to_a_hundred() -> None:
    p = percentiles_of(float(v) for v in range(100, 0, -1))
    assert (p.count, p.mean, p.p50, p.p90, p.p99, p.max) == (100, 50.5, 50.0, 90.0, 99.0, 100.0)


def test_one_value_is_every_percentile() -> None:
    assert percentiles_of([0.25]) == Percentiles(1, 0.25, 0.25, 0.25, 0.25, 0.25)


def test_no_values_give_none_not_nan() -> None:
    assert percentiles_of([]) == Percentiles(0, None, None, None, None, None)
