"""Replay a workload through the real KV cache manager and scheduler with a fake model.

The fake model emits each request's planned output tokens, one per decode step. Simulated time
orders arrivals and times requests; it never affects what fits. A step lasts the roofline
estimate of `config.step_cost` when given (metrics/step_cost.py: weights and KV read at the GPU's
bandwidth, or FLOPs at its throughput, whichever is longer), else the fixed model
`step_base_s + step_per_token_s x batched tokens` (for layouts built without a GPU). A request
that depends on another (the next turn of a session) arrives when that one has finished, at the
earliest.

Steps in which every running request decodes and nothing waits (most of a replay) are taken
through the scheduler's DecodeRun: event by event, with time and metrics still summed step by
step, so a replay costs per block boundary and per finish rather than per request-step.

Besides counts the report carries metrics/'s measures: hits by first admission and
re-admission (from the scheduler's `is_new` entries), evictions in tokens, per-request queueing
delay / TTFT proxy / latency percentiles and throughput, and a bounded time series. Their
per-step cost is O(1) plus a check per scheduled entry.

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
from hkv.runtime.scheduler.decode_run import DecodeRun
from hkv.runtime.scheduler.scheduler import Scheduler, SchedulerConfig
from hkv.runtime.scheduler.scheduler_output import ScheduledRequest
from hkv.runtime.simulation.metrics.admission_hits import AdmissionCounter
from hkv.runtime.simulation.metrics.evictions import evictions_of
from hkv.runtime.simulation.metrics.kv_read import KvReadModel
from hkv.runtime.simulation.metrics.request_timing import RequestTimings
from hkv.runtime.simulation.metrics.step_cost import StepCost
from hkv.runtime.simulation.metrics.time_series import DEFAULT_MAX_POINTS, TimeSeriesSampler
from hkv.runtime.simulation.simulation_report import GroupUsage, SimulationReport
from hkv.runtime.simulation.workload_request import WorkloadRequest

ProgressFn = Callable[[int, int | None], None]  # (finished requests, total requests if known)
Live = tuple[Request, Sequence[int], int]  # a request in the scheduler, its planned outputs, its index
_NEVER = float("inf")  # no request is yet to arrive


@dataclass(frozen=True)
class SimulationConfig:
    scheduler: SchedulerConfig = SchedulerConfig()
    cache: CacheConfig = CacheConfig()
    step_base_s: float = 0.010  # the fixed step model, used when step_cost is None
    step_per_token_s: float = 20e-6
    check_integrity_every: int = 0  # steps; 0 = never (tests set it)
    step_cost: StepCost | None = None  # the roofline estimate (a plan and a GPU give it)
    series_max_points: int = DEFAULT_MAX_POINTS
    # Steps where every running request decodes and nothing waits go through a DecodeRun (event
    # by event, scheduler/decode_run.py); False steps every request one at a time through
    # Scheduler.schedule, the reference the runs are checked against (same report).
    decode_runs: bool = True


class Simulator:
    """Mutates nothing it is given; `run` may be interrupted and `report` still describes what ran."""

    def __init__(self, layout: Layout, workload: Iterable[WorkloadRequest],
                 config: SimulationConfig | None = None) -> None:
        self.layout = layout
        self.workload = workload
        self.config = config or SimulationConfig()
        # No tensor sits behind a replay's block ids: hkv's own layouts may hold their lockstep
        # groups as lanes (see KVCacheManager).
        self.kv = KVCacheManager(layout, self.config.cache, physical_block_ids=False)
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
        self._timings = RequestTimings()
        self._admissions = AdmissionCounter()
        self._series = TimeSeriesSampler(self.config.series_max_points)
        step_cost = self.config.step_cost
        self._kv_read = None if step_cost is None else KvReadModel.from_layout(layout, list(self.kv.pools))
        self._context_tokens = 0  # computed tokens of the running requests (roofline only)
        self._compute_bound_steps = 0
        self.num_decode_run_steps = 0  # steps taken through DecodeRuns (for tests and benchmarks)

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
        scheduler = self.scheduler
        timings = self._timings
        live: dict[str, Live] = {}

        def sampled_tokens(request: Request, count: int) -> Sequence[int]:
            planned = live[request.request_id][1]
            num_out = len(request.token_ids) - request.num_prompt_tokens
            return planned[num_out:num_out + count]

        while pending is not None or ready or scheduler.has_unfinished_requests:
            # Pull every request that has arrived by now (and the next one, to know when it comes).
            while pending is not None and pending.arrival_s <= self.now_s:
                index = self._num_arrived
                self._arrive(index, pending, ready, dependents, finish_s)
                pending = next(source, None)
            while ready and ready[0][0] <= self.now_s:
                ready_s, index, wr = heapq.heappop(ready)
                request = Request(wr.request_id, wr.prompt_token_ids, wr.output_len)
                live[wr.request_id] = (request, wr.output_token_ids, index)
                timings.arrival_s[index] = ready_s
                scheduler.add_request(request)
            if not scheduler.has_unfinished_requests:
                upcoming = ([ready[0][0]] if ready else []) + ([pending.arrival_s] if pending is not None else [])
                if not upcoming:
                    if dependents:
                        raise RuntimeError("simulation stalled: requests wait on requests that never arrived")
                    break
                self.now_s = max(self.now_s, min(upcoming))
                continue
            run = scheduler.decode_run(sampled_tokens) if cfg.decode_runs else None
            if run is not None:
                upcoming_s = min(ready[0][0] if ready else _NEVER, pending.arrival_s if pending is not None else _NEVER)
                taken = self._decode_run(run, upcoming_s, ready, live, dependents, finish_s, progress, total)
                run.close()
                self.num_decode_run_steps += taken
                if taken:
                    continue  # else its first step may preempt: schedule() takes it
            output = scheduler.schedule()
            sampled = {}
            first_tokens: list[int] = []  # indices of the requests emitting their first token
            for entry in output.scheduled:
                if entry.is_new:
                    self._admitted(entry, live[entry.request_id])
                if entry.emits_token:
                    request_id = entry.request_id
                    req, planned, index = live[request_id]
                    num_out = len(req.token_ids) - req.num_prompt_tokens
                    if num_out == 0:
                        first_tokens.append(index)
                    sampled[request_id] = planned[num_out]
            if self._kv_read is not None and output.preempted_request_ids:
                # preempted requests dropped their computed tokens
                self._context_tokens = sum(r.num_computed_tokens for r in scheduler.running)
            self.now_s += self._step_s(output.num_batched_tokens, len(output.scheduled))  # the step's blocks
            finished = scheduler.update_from_output(output, sampled)
            self._record(output.num_batched_tokens)
            for index in first_tokens:
                timings.first_token_s[index] = self.now_s
            if self._kv_read is not None:
                self._context_tokens += output.num_batched_tokens
            if finished:
                self._finished_now(finished, ready, live, dependents, finish_s, progress, total)
            if cfg.check_integrity_every and self._steps % cfg.check_integrity_every == 0:
                self.kv.check_integrity()
                assert self._kv_read is None or self._context_tokens == sum(
                    r.num_computed_tokens for r in scheduler.running), "context tokens drifted"
            if (output.is_empty and not finished and not ready and pending is None
                    and scheduler.has_unfinished_requests):
                raise RuntimeError("simulation stalled: requests wait but nothing can be scheduled")

    def _arrive(self, index: int, wr: WorkloadRequest, ready: list[tuple[float, int, WorkloadRequest]],
                dependents: dict[int, list[tuple[int, WorkloadRequest]]], finish_s: dict[int, float]) -> None:
        """Count a request pulled from the workload and queue it: ready at its arrival, or parked
        until the request it depends on finishes (at the earliest, its arrival)."""
        self._num_arrived += 1
        self._timings.add()
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

    def _admitted(self, entry: ScheduledRequest, live: Live) -> None:
        """A request's first step since (re-)admission: `positions.start` tokens came from its hit.
        Called before the step advances simulated time (its start)."""
        request, _, index = live
        hit_len = entry.positions.start
        is_first = request.num_preemptions == 0
        self._admissions.note(is_first, request.num_tokens, hit_len)
        if is_first:
            self._timings.first_scheduled_s[index] = self.now_s
        self._context_tokens += hit_len

    def _decode_run(self, run: DecodeRun, upcoming_s: float, ready: list[tuple[float, int, WorkloadRequest]],
                    live: dict[str, Live], dependents: dict[int, list[tuple[int, WorkloadRequest]]],
                    finish_s: dict[int, float], progress: ProgressFn | None, total: int | None) -> int:
        """Take the steps of a DecodeRun (every running request decodes, nothing waits) until a
        request arrives (simulated time reaches `upcoming_s`, or a finish readies a dependent),
        none runs, or a step might not fit; returns the steps taken. Time and metrics advance
        step by step as in `_loop`; steps with no event cost a few float operations each."""
        cfg = self.config
        roofline = self._kv_read is not None
        scheduler = self.scheduler
        check_every = cfg.check_integrity_every
        taken = 0
        while True:
            num_running = run.num_running
            num_steady = run.num_steady_steps
            if num_steady:
                done = self._steady_steps(num_steady, num_running, upcoming_s)
                run.advance_steady(done)
                taken += done
                if check_every and self._steps // check_every > (self._steps - done) // check_every:
                    run.sync()
                    self.kv.check_integrity()
                if self.now_s >= upcoming_s:
                    return taken
                continue
            if not run.schedule_step():
                return taken
            self.now_s += self._step_s(num_running, num_running)
            finished = run.update_step()
            taken += 1
            self._record(num_running)
            if roofline:
                self._context_tokens += num_running
            if finished:
                self._finished_now(finished, ready, live, dependents, finish_s, progress, total)
                if ready:
                    upcoming_s = min(upcoming_s, ready[0][0])
            if check_every and self._steps % check_every == 0:
                run.sync()
                self.kv.check_integrity()
            if self.now_s >= upcoming_s or not scheduler.running:
                return taken

    def _steady_steps(self, num_steps: int, num_running: int, upcoming_s: float) -> int:
        """Time and record up to `num_steps` steps in which each of the `num_running` requests
        decodes a token and nothing else changes (blocks in use, queue), stopping after the
        first that reaches `upcoming_s`; returns how many. Float sums are added step by step,
        as `_record` adds them, so the report is the same to the last bit."""
        in_use = self._blocks_in_use()
        usage = self._kv_usage()
        roofline = self._kv_read is not None
        series = self._series
        admissions = self._admissions
        done = 0
        while done < num_steps:
            self.now_s += self._step_s(num_running, num_running)
            if roofline:
                self._context_tokens += num_running
            done += 1
            self._usage_sum += usage
            if self.now_s >= series.next_s:
                series.sample(self.now_s, num_running, 0, usage, admissions.first_hit_tokens,
                              admissions.first_tokens)
            if self.now_s >= upcoming_s:
                break
        self._steps += done
        self._tokens += done * num_running
        self._running_sum += done * num_running
        self._running_peak = max(self._running_peak, num_running)
        self._blocks_sum = [total + done * n for total, n in zip(self._blocks_sum, in_use, strict=True)]
        self._blocks_peak = list(map(max, self._blocks_peak, in_use))
        self._usage_peak = max(self._usage_peak, usage)
        return done

    def _finished_now(self, finished: list[Request], ready: list[tuple[float, int, WorkloadRequest]],
                      live: dict[str, Live], dependents: dict[int, list[tuple[int, WorkloadRequest]]],
                      finish_s: dict[int, float], progress: ProgressFn | None, total: int | None) -> None:
        """Account requests the step just taken finished; ready the requests that waited on them."""
        timings = self._timings
        for req in finished:
            _, _, index = live.pop(req.request_id)
            self._finished += 1
            finish_s[index] = self.now_s
            timings.finish_s[index] = self.now_s
            if self._kv_read is not None:
                self._context_tokens -= req.num_computed_tokens
            for j, wr in dependents.pop(index, ()):
                heapq.heappush(ready, (max(wr.arrival_s, self.now_s), j, wr))
        if progress is not None:
            progress(self._finished, total)

    def _step_s(self, num_tokens: int, num_scheduled: int) -> float:
        """A step's simulated time: the roofline estimate with a step cost, else the fixed model."""
        if self._kv_read is None:
            cfg = self.config
            return cfg.step_base_s + cfg.step_per_token_s * num_tokens
        return self._roofline_step_s(num_tokens, num_scheduled)

    def _blocks_in_use(self) -> list[int]:
        """Per group blocks in use: each pool counts its own groups (0 for the others)."""
        counts = self._in_use_counts
        return counts[0] if len(counts) == 1 else list(map(sum, zip(*counts)))

    def _kv_usage(self) -> float:
        """Share of usable blocks in use, over all pools."""
        free = 0
        for pool in self._pools:
            free += pool.num_free_blocks
        return 1.0 - free / self._num_usable if self._num_usable else 0.0

    def _roofline_step_s(self, num_tokens: int, num_scheduled: int) -> float:
        """The roofline time (StepCost) of a step of `num_tokens` over `num_scheduled` requests,
        from the blocks in use once it is scheduled and the context its requests attend to."""
        step_cost, kv_read = self.config.step_cost, self._kv_read
        assert step_cost is not None and kv_read is not None
        kv_bytes = kv_read.read_bytes(self._context_tokens + num_tokens, self._in_use_counts, num_scheduled)
        memory_s, compute_s = step_cost.memory_s(num_tokens, kv_bytes), step_cost.compute_s(num_tokens)
        if compute_s > memory_s:
            self._compute_bound_steps += 1
            return step_cost.overhead_s + compute_s
        return step_cost.overhead_s + memory_s

    def _record(self, num_batched_tokens: int) -> None:
        self._steps += 1
        self._tokens += num_batched_tokens
        running = len(self.scheduler.running)
        self._running_sum += running
        self._running_peak = max(self._running_peak, running)
        in_use = self._blocks_in_use()
        self._blocks_sum = list(map(add, self._blocks_sum, in_use))
        self._blocks_peak = list(map(max, self._blocks_peak, in_use))
        usage = self._kv_usage()
        self._usage_sum += usage
        self._usage_peak = max(self._usage_peak, usage)
        series = self._series
        if self.now_s >= series.next_s:
            admissions = self._admissions
            series.sample(self.now_s, running, len(self.scheduler.waiting), usage, admissions.first_hit_tokens,
                          admissions.first_tokens)

    def report(self) -> SimulationReport:
        stats = self.kv.stats()
        steps = max(1, self._steps)
        evicted = [sum(p.num_evictions_by_group[i] for p in self._pools) for i in range(len(self.layout.groups))]
        groups = tuple(
            GroupUsage(g.kind.value, g.num_layers, self._blocks_peak[i], self._blocks_sum[i] / steps,
                       stats.num_early_released_blocks[i], evicted[i])
            for i, g in enumerate(self.layout.groups))
        step_cost = self.config.step_cost
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
            step_time_model="fixed" if step_cost is None else "roofline",
            step_time_detail=(f"fixed: {self.config.step_base_s * 1e3:g} ms + "
                              f"{self.config.step_per_token_s * 1e6:g} us per batched token"
                              if step_cost is None else step_cost.describe()),
            compute_bound_steps=self._compute_bound_steps,
            hits=self._admissions.snapshot(),
            evictions=evictions_of(self.layout.groups, evicted),
            timing=self._timings.summary(),
            time_series=self._series.series(),
            eviction_policy=self.config.cache.eviction_policy.value,
        )

