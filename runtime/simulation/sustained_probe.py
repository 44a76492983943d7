"""Sustained concurrency, measured: N max-length requests through the real scheduler and pools.

The measurement side of hkv.planner.capacity.sustained (which predicts the same figure from the Layout).
Each trial builds a fresh KVCacheManager (prefix caching off: the requests share nothing) and a
Scheduler with vLLM 0.32's admission (`Admission.GATE`: a waiting request is admitted when slots
for its whole prompt fit, sliding and chunked groups capped at what they ever hold; never the
Layout's worst case for the whole sequence), adds N requests of
`max_model_len` tokens at once and steps a fake model (it samples token 0) until all finish.
A trial is clean when no request was preempted and all N were running at the same time.
The search over N is the planner's (`largest_clean` from `search_guess`), so both sides
answer the same question.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.layout import Layout
from hkv.planner.capacity.sustained import SustainedSetup, largest_clean, search_guess
from hkv.runtime.errors import OutOfBlocksError
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.kv_cache_manager import KVCacheManager
from hkv.runtime.request import Request
from hkv.runtime.scheduler.scheduler import Admission, Scheduler, SchedulerConfig


@dataclass(frozen=True)
class Trial:
    """What N requests arriving together did."""

    num_requests: int
    num_preemptions: int
    peak_running: int
    num_finished: int

    @property
    def is_clean(self) -> bool:
        return self.num_preemptions == 0 and self.peak_running == self.num_requests


@dataclass(frozen=True)
class SustainedMeasurement:
    sustained: int  # largest clean N (ramp)
    next_trial: Trial | None  # the first N that is not clean (N + 1); None when capped by max_num_seqs


HKV_MODE = CacheConfig(enable_caching=False)  # the requests share nothing: caching would only cost time


def run_together(layout: Layout, num_requests: int, setup: SustainedSetup,
                 stop_at_preemption: bool = False, cache_config: CacheConfig = HKV_MODE) -> Trial:
    """N max-length requests arriving together, run to completion (or to the first preemption
    when `stop_at_preemption`). Mutates nothing it is given."""
    prompt_len, output_len = setup.request_lens(layout.max_model_len)
    kv = KVCacheManager(layout, cache_config)
    scheduler = Scheduler(kv, SchedulerConfig(
        max_num_batched_tokens=setup.max_num_batched_tokens, max_num_seqs=setup.max_num_seqs,
        admission=Admission.GATE))
    for i in range(num_requests):
        scheduler.add_request(Request(f"sustained-{i}", [i % 1000 + 1] * prompt_len, output_len))
    peak = finished = 0
    while scheduler.has_unfinished_requests:
        try:
            output = scheduler.schedule()
        except OutOfBlocksError:
            break  # one request alone does not fit
        peak = max(peak, len(scheduler.running))
        if stop_at_preemption and scheduler.num_preemptions:
            break
        sampled = {e.request_id: 0 for e in output.scheduled if e.emits_token}
        finished += len(scheduler.update_from_output(output, sampled))
    return Trial(num_requests, scheduler.num_preemptions, peak, finished)


def measure_sustained(layout: Layout, setup: SustainedSetup,
                      cache_config: CacheConfig = HKV_MODE) -> SustainedMeasurement:
    """A clean N whose successor is not (the planner's search, see hkv.planner.capacity.sustained), and
    the full trial of that successor (its preemptions)."""
    def is_clean(n: int) -> bool:
        return run_together(layout, n, setup, stop_at_preemption=True, cache_config=cache_config).is_clean

    guess = search_guess(layout, sum(setup.request_lens(layout.max_model_len)))
    sustained = largest_clean(guess, setup.max_num_seqs, is_clean)
    if sustained >= setup.max_num_seqs:
        return SustainedMeasurement(sustained, None)
    return SustainedMeasurement(sustained, run_together(layout, sustained + 1, setup, cache_config=cache_config))
