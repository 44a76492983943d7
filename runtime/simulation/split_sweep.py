"""sweep_split: simulate one workload through partitioned layouts split at several lengths.

Separate pools are sized so that they run out together at one sequence length (the planner's
`expected_avg_seq_len`, vLLM-style EXPECTED_AVERAGE_SEQ_LENGTH). Which split serves a workload
best is an empirical question: this tries the workload's mean length, the powers of two from
256 up to max_model_len, and max_model_len itself, and simulates each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.block_fit import check_pools_hold_a_block
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime.simulation.simulator import SimulationConfig, Simulator
from hkv.runtime.simulation.workload_request import WorkloadRequest

_MIN_SPLIT_EXPONENT = 8  # 256 tokens: shorter splits starve the global pool of any real request


@dataclass(frozen=True)
class SplitTrial:
    """One split's simulated outcome."""

    expected_avg_seq_len: int
    simulated_s: float
    num_steps: int
    num_preemptions: int
    mean_running: float
    prefix_hit_rate: float
    num_finished: int


def split_candidates(requests: Sequence[WorkloadRequest], max_model_len: int) -> list[int]:
    """The mean request length, the powers of two from 256 to max_model_len, and max_model_len;
    sorted, without repeats. `requests` must not be empty."""
    mean_len = sum(r.prompt_len + r.output_len for r in requests) // len(requests)
    powers = {2**k for k in range(_MIN_SPLIT_EXPONENT, max_model_len.bit_length()) if 2**k <= max_model_len}
    return sorted({max(1, mean_len)} | powers | {max_model_len})


def sweep_split(spec: ModelSpec, cfg: PlanConfig, requests: Sequence[WorkloadRequest],
                sim_cfg: SimulationConfig) -> list[SplitTrial]:
    """Plan and simulate the partitioned layout at each candidate split, in increasing order;
    stops after a simulation that was interrupted. Raises DoesNotFitError when a split leaves a
    pool without a usable block."""
    max_len = cfg.max_model_len or spec.max_model_len
    trials = []
    for split in split_candidates(requests, max_len):
        split_plan = plan(spec, replace(cfg, expected_avg_seq_len=split, primary_layout="partitioned"))
        layout = split_plan.reports["partitioned"].layout
        check_pools_hold_a_block(layout, split_plan.budget.available_bytes)
        report = Simulator(layout, requests, sim_cfg).run()
        trials.append(SplitTrial(split, report.simulated_s, report.num_steps, report.num_preemptions,
                                 report.mean_running, report.prefix_hit_rate, report.num_finished))
        if report.interrupted:
            break
    return trials


def best_split(trials: Sequence[SplitTrial]) -> SplitTrial:
    """The shortest simulated time, then the fewest preemptions (the first such on a tie)."""
    return min(trials, key=lambda t: (t.simulated_s, t.num_preemptions))
