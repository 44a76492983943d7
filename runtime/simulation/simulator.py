"""Replay a workload through the real KV cache manager and scheduler with a fake model.

The fake model emits each request's planned output tokens, one per decode step. Simulated time
only orders arrivals: a step lasts `step_base_s + step_per_token_s x batched tokens` (a rough
GPU cost model; it never affects what fits). A request that depends on another (the next turn of
a session) arrives when that one has finished, at the earliest.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import add

from hkv.planner.layout import Layout
from hkv.runtime.build_info import runtime_build
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.kv_cache_manager import KVCacheManager
from hkv.runtime.request import Request
from hkv.runtime.scheduler.scheduler import Scheduler, SchedulerConfig
from hkv.runtime.simulation.simulation_report import GroupUsage, SimulationReport
from hkv.runtime.simulation.workload_request import WorkloadRequest

ProgressFn = Callable[[int, int], None]  # (finished requests, total requests)


@dataclass(frozen=True)
class SimulationConfig:
    scheduler: SchedulerConfig = SchedulerConfig()
    cache: CacheConfig = CacheConfig()
    step_base_s: float = 0.010
    step_per_token_s: float = 20e-6
    check_integrity_every: int = 0  # steps; 0 = never (tests set it)


class Simulator:
    """Mutates nothing it is given; `run` may be interrupted and `report` still describes what ran."""

    def __init__(self, layout: Layout, workload: Sequence[WorkloadRequest],
                 config: SimulationConfig | None = None) -> None:
        self.layout = layout
        self.workload = workload
        self.config = config or SimulationConfig()
        self.kv = KVCacheManager(layout, self.config.cache)
        self.scheduler = Scheduler(self.kv, self.config.scheduler)
        self.now_s = 0.0
        self._finished = 0
        self._steps = 0
        self._tokens = 0
        self._running_sum = 0
        self._running_peak = 0
        self._usage_sum = 0.0
        self._usage_peak = 0.0
        num_groups = len(layout.groups)
        self._blocks_sum = [0] * num_groups
        self._blocks_peak = [0] * num_groups
        self._wall_s = 0.0
        self._interrupted = False
        self._pools = list(self.kv.pools.values())
        self._in_use_counts = [pool.num_in_use_by_group for pool in self._pools]  # live lists
        self._num_usable = sum(pool.num_usable_blocks for pool in self._pools)

    def run(self, progress: ProgressFn | None = None) -> SimulationReport:
        start = time.perf_counter()
        try:
            self._loop(progress)
        except KeyboardInterrupt:
            self._interrupted = True
        finally:
            self._wall_s = time.perf_counter() - start
        return self.report()

    def _loop(self, progress: ProgressFn | None) -> None:
        cfg = self.config
        workload = self.workload
        dependents: dict[int, list[int]] = {}
        ready: list[tuple[float, int]] = []  # (arrival, index) heap
        for i, wr in enumerate(workload):
            if wr.depends_on is None:
                ready.append((wr.arrival_s, i))
            else:
                dependents.setdefault(wr.depends_on, []).append(i)
        heapq.heapify(ready)
        index_of = {wr.request_id: i for i, wr in enumerate(workload)}
        total = len(workload)
        scheduler = self.scheduler
        live: dict[str, tuple[Request, Sequence[int]]] = {}  # request, its planned output tokens
        while ready or scheduler.has_unfinished_requests:
            while ready and ready[0][0] <= self.now_s:
                _, i = heapq.heappop(ready)
                wr = workload[i]
                request = Request(wr.request_id, wr.prompt_token_ids, wr.output_len)
                live[wr.request_id] = (request, wr.output_token_ids)
                scheduler.add_request(request)
            if not scheduler.has_unfinished_requests:
                self.now_s = ready[0][0]
                continue
            output = scheduler.schedule()
            sampled = {}
            for entry in output.scheduled:
                if entry.emits_token:
                    request_id = entry.request_id
                    req, planned = live[request_id]
                    sampled[request_id] = planned[len(req.token_ids) - req.num_prompt_tokens]
            finished = scheduler.update_from_output(output, sampled)
            self.now_s += cfg.step_base_s + cfg.step_per_token_s * output.num_batched_tokens
            self._record(output.num_batched_tokens)
            for req in finished:
                del live[req.request_id]
                self._finished += 1
                for j in dependents.pop(index_of[req.request_id], ()):
                    heapq.heappush(ready, (max(workload[j].arrival_s, self.now_s), j))
            if finished and progress is not None:
                progress(self._finished, total)
            if cfg.check_integrity_every and self._steps % cfg.check_integrity_every == 0:
                self.kv.check_integrity()
            if output.is_empty and not finished and not ready and scheduler.has_unfinished_requests:
                raise RuntimeError("simulation stalled: requests wait but nothing can be scheduled")

    def _record(self, num_batched_tokens: int) -> None:
        self._steps += 1
        self._tokens += num_batched_tokens
        running = len(self.scheduler.running)
        self._running_sum += running
        self._running_peak = max(self._running_peak, running)
        # Per group blocks in use: each pool counts its own groups (0 for the others).
        counts = self._in_use_counts
        in_use = counts[0] if len(counts) == 1 else list(map(sum, zip(*counts)))
        self._blocks_sum = list(map(add, self._blocks_sum, in_use))
        self._blocks_peak = list(map(max, self._blocks_peak, in_use))
        free = 0
        for pool in self._pools:
            free += pool.num_free_blocks
        usage = 1.0 - free / self._num_usable if self._num_usable else 0.0
        self._usage_sum += usage
        self._usage_peak = max(self._usage_peak, usage)

    def report(self) -> SimulationReport:
        stats = self.kv.stats()
        steps = max(1, self._steps)
        groups = tuple(
            GroupUsage(g.kind.value, g.num_layers, self._blocks_peak[i], self._blocks_sum[i] / steps,
                       stats.num_early_released_blocks[i])
            for i, g in enumerate(self.layout.groups))
        return SimulationReport(
            layout=self.layout.name,
            num_requests=len(self.workload),
            num_finished=self._finished,
            interrupted=self._interrupted,
            num_steps=self._steps,
            num_tokens_processed=self._tokens,
            num_prompt_tokens=sum(w.prompt_len for w in self.workload),
            num_output_tokens=sum(w.output_len for w in self.workload),
            peak_running=self._running_peak,
            mean_running=self._running_sum / steps,
            num_preemptions=self.scheduler.num_preemptions,
            prefix_hit_rate=stats.hit_rate,
            num_hit_tokens=stats.num_hit_tokens,
            num_evictions=stats.num_evictions,
            mean_kv_usage=self._usage_sum / steps,
            peak_kv_usage=self._usage_peak,
            simulated_s=self.now_s,
            wall_s=self._wall_s,
            runtime_build=runtime_build(),
            groups=groups,
        )

