"""A bounded time series of a replay: running, waiting, KV use and hit rate over simulated time.

Sampling is at fixed intervals of simulated time: a point is taken at the end of the first step
that reaches each multiple of `interval_s` (idle gaps give no points). The interval starts small;
whenever the points exceed `max_points`, those off the doubled interval's grid are dropped and
the interval doubles. So a series has at most `max_points` points, evenly spaced, whatever the
run's length, and each step costs one comparison (`now_s >= next_s`) between samples.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_POINTS = 1000
FIRST_INTERVAL_S = 0.01


@dataclass(frozen=True)
class TimeSeries:
    """Columns of equal length, one entry per point. running / waiting: requests at the point;
    kv_usage: share of usable blocks in use; hit_rate: the first-admission prefix hit rate so far
    (prompt tokens served from the cache / prompt tokens, first admissions up to the point);
    interval_hit_rate: the same over the admissions since the previous point only (noisy when
    few requests arrive per interval). None (JSON null) where no request had been admitted for
    the first time (so far, or in the interval)."""

    interval_s: float
    t_s: tuple[float, ...]
    running: tuple[int, ...]
    waiting: tuple[int, ...]
    kv_usage: tuple[float, ...]
    hit_rate: tuple[float | None, ...]
    interval_hit_rate: tuple[float | None, ...]


class TimeSeriesSampler:
    """Collects the points; the simulator calls `sample` once `now_s >= next_s`. Hits are taken
    as running totals so that dropping a point merges its interval into the next one."""

    def __init__(self, max_points: int = DEFAULT_MAX_POINTS, first_interval_s: float = FIRST_INTERVAL_S) -> None:
        assert max_points >= 2 and first_interval_s > 0
        self.max_points = max_points
        self.interval_s = first_interval_s
        self.next_s = 0.0
        self._grid: list[int] = []  # the multiple of interval_s each point stands for
        self._t_s: list[float] = []
        self._running: list[int] = []
        self._waiting: list[int] = []
        self._kv_usage: list[float] = []
        self._hit_tokens: list[int] = []  # first-admission totals at each point
        self._prompt_tokens: list[int] = []

    def sample(self, now_s: float, running: int, waiting: int, kv_usage: float, hit_tokens: int,
               prompt_tokens: int) -> None:
        k = int(now_s // self.interval_s)
        self._grid.append(k)
        self._t_s.append(now_s)
        self._running.append(running)
        self._waiting.append(waiting)
        self._kv_usage.append(kv_usage)
        self._hit_tokens.append(hit_tokens)
        self._prompt_tokens.append(prompt_tokens)
        while len(self._grid) > self.max_points:
            self._coarsen()
        self.next_s = (int(now_s // self.interval_s) + 1) * self.interval_s

    def _coarsen(self) -> None:
        """Keep the points on even multiples of the interval, then double it."""
        keep = [i for i, k in enumerate(self._grid) if k % 2 == 0]
        self._grid = [self._grid[i] // 2 for i in keep]
        self._t_s = [self._t_s[i] for i in keep]
        self._running = [self._running[i] for i in keep]
        self._waiting = [self._waiting[i] for i in keep]
        self._kv_usage = [self._kv_usage[i] for i in keep]
        self._hit_tokens = [self._hit_tokens[i] for i in keep]
        self._prompt_tokens = [self._prompt_tokens[i] for i in keep]
        self.interval_s *= 2

    def series(self) -> TimeSeries:
        so_far: list[float | None] = []
        interval: list[float | None] = []
        hits_before = prompt_before = 0
        for hits, prompt in zip(self._hit_tokens, self._prompt_tokens, strict=True):
            so_far.append(hits / prompt if prompt else None)
            interval.append((hits - hits_before) / (prompt - prompt_before) if prompt > prompt_before else None)
            hits_before, prompt_before = hits, prompt
        return TimeSeries(self.interval_s, tuple(self._t_s), tuple(self._running), tuple(self._waiting),
                          tuple(self._kv_usage), tuple(so_far), tuple(interval))
