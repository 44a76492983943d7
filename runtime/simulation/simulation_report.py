"""What a simulation measured; frozen, JSON-safe via dataclasses.asdict."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GroupUsage:
    kind: str
    num_layers: int
    peak_blocks: int
    mean_blocks: float
    early_released_blocks: int  # freed before the request finished (windows, chunks, old states)


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
    prefix_hit_rate: float  # prompt tokens served from the prefix cache / prompt tokens admitted
    num_hit_tokens: int
    num_evictions: int
    mean_kv_usage: float  # share of usable blocks in use, averaged over steps
    peak_kv_usage: float
    simulated_s: float
    wall_s: float
    runtime_build: str  # "python" or "mypyc" (a compiled install, see setup.py): only speed differs
    groups: tuple[GroupUsage, ...]
