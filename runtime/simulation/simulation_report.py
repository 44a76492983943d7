"""What a simulation measured; frozen, JSON-safe via dataclasses.asdict (no NaN: absent figures
are None). Times are simulated seconds unless named wall_s. docs/cli.md explains each metric."""

from __future__ import annotations

from dataclasses import dataclass

from hkv.runtime.simulation.metrics.admission_hits import AdmissionHits
from hkv.runtime.simulation.metrics.evictions import Evictions
from hkv.runtime.simulation.metrics.request_timing import TimingSummary
from hkv.runtime.simulation.metrics.time_series import TimeSeries


@dataclass(frozen=True)
class GroupUsage:
    kind: str
    num_layers: int
    peak_blocks: int
    mean_blocks: float
    early_released_blocks: int  # freed before the request finished (windows, chunks, old states)
    evicted_blocks: int  # cached blocks of this group reused for other data


@dataclass(frozen=True)
class SimulationReport:
    layout: str
    num_requests: int  # requests pulled from the workload: all of them unless the run was interrupted
    num_finished: int
    interrupted: bool
    num_steps: int
    num_tokens_processed: int  # tokens computed by the fake model (prefill + decode + recompute)
    num_prompt_tokens: int
    num_output_tokens: int
    peak_running: int
    mean_running: float
    num_preemptions: int
    # Hit tokens / tokens of every admission, re-admissions after preemption included (they mostly
    # re-find their own blocks): the KV cache manager's counter. Compare hits.first_admission_hit_rate.
    prefix_hit_rate: float
    num_hit_tokens: int  # all admissions, as prefix_hit_rate
    num_evictions: int  # evicted blocks, counted per group block (evictions.evicted_tokens compares layouts)
    mean_kv_usage: float  # share of usable blocks in use, averaged over steps
    peak_kv_usage: float
    simulated_s: float
    wall_s: float
    runtime_build: str  # "python" or "mypyc" (a compiled install, see setup.py): only speed differs
    groups: tuple[GroupUsage, ...]
    step_time_model: str  # "roofline" (an estimate from the GPU's spec sheet) or "fixed"
    step_time_detail: str  # the figures the step time came from, in words
    compute_bound_steps: int  # roofline: steps whose FLOPs outlast their memory reads (0 when fixed)
    hits: AdmissionHits  # first-admission hit rate, re-admission share
    evictions: Evictions  # in tokens of the attention stack and states of the recurrent stack
    timing: TimingSummary  # per-request queueing delay, TTFT proxy, latency percentiles; throughput
    time_series: TimeSeries  # running, waiting, KV use, hit rate over simulated time (<= 1,000 points)
    eviction_policy: str  # "lru" or "group_aware" (EvictionPolicy), as this layout ran
