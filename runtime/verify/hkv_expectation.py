"""What hkv expects of vLLM's sustained runs, from two of its own mechanisms.

* the planner's prediction (hkv.planner.capacity.sustained: a count model over the Layout, no allocator);
* hkv's runtime in vLLM-compatible mode (hkv.runtime.simulation.sustained_probe: the real
  Scheduler and KVCacheManager, `CacheConfig.vllm`, really allocating): its sustained N and the
  preemptions it counts when the engine's first unclean N (vLLM's sustained + 1) arrives at once.

Both run with the step budget the engine really has (`max_num_batched_tokens` as vLLM resolved
it: on CPU twice the plan's, see vllm_engine_args), so they face the engine's schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.layout import Layout
from hkv.planner.capacity.sustained import SustainedSetup, predict_sustained
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.simulation.sustained_probe import Trial, measure_sustained, run_together

# vLLM-compatible mode with prefix caching off: the sustained runs' prompts share no block, so a
# cache could only hand back the blocks it was given (the engine's caching setting changes nothing).
VLLM_MODE = CacheConfig.vllm(enable_caching=False)


@dataclass(frozen=True)
class HkvExpectation:
    setup: SustainedSetup  # the engine's step budget and sequence cap, the planner's request split
    predicted: int  # the planner's sustained N
    simulated: int  # hkv's runtime: sustained N, measured by allocating
    next_trial: Trial | None  # hkv's runtime at simulated + 1, run to completion (None: capped)

    def preemptions_at(self, layout: Layout, num_requests: int) -> int:
        """Preemptions hkv's runtime (vLLM-compatible mode) counts when `num_requests` max-length
        requests arrive together and run to completion (the search's own trial when it ran it)."""
        if self.next_trial is not None and self.next_trial.num_requests == num_requests:
            return self.next_trial.num_preemptions
        return run_together(layout, num_requests, self.setup, cache_config=VLLM_MODE).num_preemptions


def expect_sustained(layout: Layout, max_num_batched_tokens: int, max_num_seqs: int,
                     output_len: int) -> HkvExpectation:
    """hkv's two sustained figures for `layout` under the engine's step budget and sequence cap."""
    setup = SustainedSetup(max_num_batched_tokens, max_num_seqs, output_len)
    simulated = measure_sustained(layout, setup, cache_config=VLLM_MODE)
    return HkvExpectation(setup, predict_sustained(layout, setup), simulated.sustained, simulated.next_trial)
