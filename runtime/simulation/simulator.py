"""Replay a workload through the real KV cache manager and scheduler with a fake model.

The fake model emits each request's planned output tokens, one per decode step. Simulated time
only orders arrivals: a step lasts `step_base_s + step_per_token_s x batched tokens` (a rough
GPU cost model; it never affects what fits). A request that depends on another (the next turn of
a session) arrives when that one has finished, at the earliest.

The workload is any iterable of WorkloadRequests in arrival order (a list, or a trace reader that
streams a file): it is pulled lazily, one request ahead of simulated time, so memory is bounded by
the requests in flight. `depends_on` indexes the iteration order. Iterating it again (a second
layout) must give the same requests.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
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

ProgressFn = Callable[[int, int | None], None]  # (finished requests, total requests if known)


@dataclass(frozen=True)
class SimulationConfig:
    scheduler: SchedulerConfig = SchedulerConfig()
    cache: CacheConfig = CacheConfig()
    step_base_s: float = 0.010
    step_per_token_s: float = 20e-6
    check_integrity_every: int = 0  # steps; 0 = never (tests set it)


class Simulator:
    """Mutates nothing it is given; `run` may be interrupted and `report` still describes what ran."""

    def __init__(self, layout: Layout, workload: Iterable[WorkloadRequest],
                 config: SimulationConfig | None = None) -> None:
        self.layout = layout
        self.workload = workload
        self.config = config or SimulationConfig()
        self.kv = KVCacheManager(layout, self.config.cache)
        self.scheduler = Scheduler(self.kv, self.config.scheduler)
        self.now_s = 0.0
        self._finished = 0
        self._num_arrived = 0
        self._num_prompt_tokens = 0
        self._num_output_tokens = 0
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
        source: Iterator[WorkloadRequest] = iter(self.workload)
        total = len(self.workload) if isinstance(self.workload, Sized) else None
        pending: WorkloadRequest | None = next(source, None)  # the next request to arrive
        ready: list[tuple[float, int, WorkloadRequest]] = []  # (arrival, index, request) heap
        dependents: dict[int, list[tuple[int, WorkloadRequest]]] = {}  # waiting on an unfinished request
        finish_s: dict[int, float] = {}  # index -> when it finished
        index_of: dict[str, int] = {}  # live requests' index
        scheduler = self.scheduler
        live: dict[str, tuple[Request, Sequence[int]]] = {}  # request, its planned output tokens
        while pending is not None or ready or scheduler.has_unfinished_requests:
            # Pull every request that has arrived by now (and the next one, to know when it comes).
            while pending is not None and pending.arrival_s <= self.now_s:
                index = self._num_arrived
                self._arrive(index, pending, ready, dependents, finish_s)
                pending = next(source, None)
            while ready and ready[0][0] <= self.now_s:
                _, index, wr = heapq.heappop(ready)
                request = Request(wr.request_id, wr.prompt_token_ids, wr.output_len)
                live[wr.request_id] = (request, wr.output_token_ids)
                index_of[wr.request_id] = index
                scheduler.add_request(request)
            if not scheduler.has_unfinished_requests:
                upcoming = [t for t in (ready[0][0] if ready else None,
                                        pending.arrival_s if pending is not None else None) if t is not None]
                if not upcoming:
                    if dependents:
                        raise RuntimeError("simulation stalled: requests wait on requests that never arrived")
                    break
                self.now_s = max(self.now_s, min(upcoming))
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
                index = index_of.pop(req.request_id)
                finish_s[index] = self.now_s
                for j, wr in dependents.pop(index, ()):
                    heapq.heappush(ready, (max(wr.arrival_s, self.now_s), j, wr))
            if finished and progress is not None:
                progress(self._finished, total)
            if cfg.check_integrity_every and self._steps % cfg.check_integrity_every == 0:
                self.kv.check_integrity()
            if (output.is_empty and not finished and not ready and pending is None
                    and scheduler.has_unfinished_requests):
                raise RuntimeError("simulation stalled: requests wait but nothing can be scheduled")

    def _arrive(self, index: int, wr: WorkloadRequest, ready: list[tuple[float, int, WorkloadRequest]],
                dependents: dict[int, list[tuple[int, WorkloadRequest]]], finish_s: dict[int, float]) -> None:
        """Count a request pulled from the workload and queue it: ready at its arrival, or parked
        until the request it depends on finishes (at the earliest, its arrival)."""
        self._num_arrived += 1
        self._num_prompt_tokens += wr.prompt_len
        self._num_output_tokens += wr.output_len
        parent = wr.depends_on
        if parent is None:
            heapq.heappush(ready, (wr.arrival_s, index, wr))
        elif parent in finish_s:
            heapq.heappush(ready, (max(wr.arrival_s, finish_s[parent]), index, wr))
        else:
            assert parent < index, f"request {wr.request_id} depends on a later request ({parent})"
            dependents.setdefault(parent, []).append((index, wr))

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
            num_requests=self._num_arrived,
            num_finished=self._finished,
            interrupted=self._interrupted,
            num_steps=self._steps,
            num_tokens_processed=self._tokens,
            num_prompt_tokens=self._num_prompt_tokens,
            num_output_tokens=self._num_output_tokens,
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

