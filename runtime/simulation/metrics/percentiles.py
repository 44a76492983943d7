"""Percentiles: p50 / p90 / p99 of a sample, by the nearest-rank method (hand-checkable)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Percentiles:
    """Summary of `count` values; every figure is None when there are none (JSON: null).

    pN is the nearest-rank percentile: the value at rank ceil(N/100 x count) (1-based) of the
    sorted values, so p50 of [1, 2, 3, 4] is 2 and p99 of 100 values is the 99th smallest.
    """

    count: int
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None


def percentiles_of(values: Iterable[float]) -> Percentiles:
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return Percentiles(0, None, None, None, None, None)

    def rank(pct: int) -> float:
        return ordered[max(1, -(-pct * n // 100)) - 1]  # ceil in integers

    return Percentiles(n, sum(ordered) / n, rank(50), rank(90), rank(99), ordered[-1])
