"""The time series stays under its point budget by dropping every other grid point and doubling
the interval; windowed hit rates survive the drop because hits are kept as running totals."""

from hkv.runtime.simulation.metrics.time_series import TimeSeriesSampler


def _sample(sampler: TimeSeriesSampler, t_s: float, hits: int, prompt: int) -> None:
    sampler.sample(t_s, running=int(t_s), waiting=0, kv_usage=t_s / 10, hit_tokens=hits, prompt_tokens=prompt)


def test_points_past_the_budget_halve_the_resolution() -> None:
    sampler = TimeSeriesSampler(max_points=4, first_interval_s=1.0)
    # first-admission totals (hit tokens, prompt tokens) at t = 0 .. 4
    for t_s, hits, prompt in ((0.0, 0, 0), (1.0, 5, 10), (2.0, 5, 10), (3.0, 15, 30), (4.0, 15, 40)):
        assert t_s >= sampler.next_s
        _sample(sampler, t_s, hits, prompt)
    series = sampler.series()
    # 5 points > 4: the odd multiples (t = 1, 3) go, the interval doubles to 2 s
    assert series.interval_s == 2.0
    assert series.t_s == (0.0, 2.0, 4.0)
    assert series.running == (0, 2, 4)
    assert series.kv_usage == (0.0, 0.2, 0.4)
    # so far: nothing admitted at t = 0, 5 of 10 by t = 2, 15 of 40 by t = 4;
    # intervals (0, 2]: 5 of 10 hit; (2, 4]: 15 - 5 = 10 of 40 - 10 = 30
    assert series.hit_rate == (None, 0.5, 15 / 40)
    assert series.interval_hit_rate == (None, 0.5, 10 / 30)
    assert sampler.next_s == 6.0


def test_a_step_past_several_grid_points_samples_once() -> None:
    sampler = TimeSeriesSampler(max_points=10, first_interval_s=0.5)
    _sample(sampler, 0.2, 0, 0)  # grid 0; next at 0.5
    assert sampler.next_s == 0.5
    _sample(sampler, 2.7, 0, 0)  # a long step: grid 5; next at 3.0
    assert sampler.next_s == 3.0
    assert sampler.series().t_s == (0.2, 2.7)


def test_a_long_run_keeps_at_most_the_budget() -> None:
    sampler = TimeSeriesSampler(max_points=1000, first_interval_s=0.01)
    t_s = 0.0
    while t_s < 5000.0:  # steps of 7 ms over 5,000 simulated seconds
        if t_s >= sampler.next_s:
            _sample(sampler, t_s, 0, 0)
        t_s += 0.007
    series = sampler.series()
    assert 500 <= len(series.t_s) <= 1000
    # evenly spread: consecutive points about one interval apart (at most one 7 ms step late)
    gaps = [b - a for a, b in zip(series.t_s, series.t_s[1:])]
    assert max(gaps) < series.interval_s + 0.007 and min(gaps) > series.interval_s - 0.007
