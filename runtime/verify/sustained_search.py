"""Search for the sustained concurrency of an engine: the largest N such that N max-length requests
arriving together all run at once and finish with zero preemptions ("clean"), found with as few
engine runs as possible.

Starting at a hint (the prediction), the search gallops away from it in steps 1, 2, 4, ... until
the answer is bracketed, then bisects. A right hint costs two runs (N clean, N + 1 not). It
assumes that a run that is not clean at N is not clean at any larger N (more requests, never
fewer blocks needed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class SustainedSearch:
    sustained: int  # largest clean N; 0 when one request alone is not clean
    capped: bool  # True when N = max_requests still ran clean: the engine may sustain more
    trials: tuple[tuple[int, bool], ...]  # (N, clean) in the order run


def search_sustained(runs_clean: Callable[[int], bool], hint: int, max_requests: int) -> SustainedSearch:
    """Call `runs_clean(N)` for N in [1, max_requests], each N at most once."""
    assert max_requests >= 1
    trials: list[tuple[int, bool]] = []

    def clean(n: int) -> bool:
        trials.append((n, runs_clean(n)))
        return trials[-1][1]

    good, bad = 0, max_requests + 1  # largest N known clean, smallest N known to preempt
    n = min(max(hint, 1), max_requests)
    step = 1
    if clean(n):  # gallop up
        good = n
        while good < max_requests:
            n = min(good + step, max_requests)
            if not clean(n):
                bad = n
                break
            good, step = n, step * 2
    else:  # gallop down
        bad = n
        while bad > 1:
            n = max(bad - step, 1)
            if clean(n):
                good = n
                break
            bad, step = n, step * 2
    while bad - good > 1:  # bisect: good is clean, bad preempts
        n = (good + bad) // 2
        if clean(n):
            good = n
        else:
            bad = n
    return SustainedSearch(good, bad > max_requests, tuple(trials))
