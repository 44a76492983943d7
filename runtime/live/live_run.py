"""generate(): prompts through the scheduler, the KV cache manager and the model, measured.

Each step: schedule -> one packed forward (ModelRunner) -> sample -> update the scheduler. A
request ends at EOS, at its max_new_tokens, or at max_model_len. Alongside, every step records
what the KV cache really held (per request and group, per group, per pool), so the run can be
checked against the planner's Layout (run_report.py).

Timings: a step that computes any prompt token is a prefill step, the others decode steps;
prefill tokens/s = prompt tokens computed / time in prefill steps, decode tokens/s = tokens
computed in decode steps / time in decode steps.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hkv.model_specs.cache_spec import CacheKind
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.errors import RequestTooLongError
from hkv.runtime.kv_cache.kv_cache_manager import KVCacheManager
from hkv.runtime.live.model_runner import ModelRunner
from hkv.runtime.request import Request
from hkv.runtime.live.run_config import RunConfig
from hkv.runtime.live.sampler import Sampler
from hkv.runtime.scheduler.scheduler import Scheduler, SchedulerConfig
from hkv.runtime.scheduler.scheduler_output import SchedulerOutput

if TYPE_CHECKING:
    import torch


@dataclass
class Generation:
    request_id: str
    prompt_token_ids: tuple[int, ...]
    output_token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None  # "eos" | "length" | "max_model_len"
    logits: list[torch.Tensor] = field(default_factory=list)  # with RunConfig.record_logits


class RunObserver:
    """Progress callbacks (no-ops here); the CLI overrides what it shows."""

    def on_prefill(self, num_done: int, num_total: int) -> None:
        """Prompt tokens computed so far out of all prompt tokens."""

    def on_token(self, generation: Generation, token_id: int) -> None:
        """A token was appended to `generation.output_token_ids`."""

    def on_finish(self, generation: Generation) -> None:
        """The request finished; `finish_reason` is set."""


@dataclass(frozen=True)
class StepTimings:
    num_steps: int
    prefill_tokens: int
    prefill_s: float
    decode_tokens: int
    decode_s: float
    total_s: float

    @property
    def prefill_tokens_per_s(self) -> float:
        return self.prefill_tokens / self.prefill_s if self.prefill_s else 0.0

    @property
    def decode_tokens_per_s(self) -> float:
        return self.decode_tokens / self.decode_s if self.decode_s else 0.0


@dataclass(frozen=True)
class CacheMeasurements:
    """What the KV cache held during a run (blocks never count the null block)."""

    peak_blocks_in_use: tuple[int, ...]  # per group
    peak_pool_blocks_in_use: tuple[int, ...]  # per pool, layout order
    early_released_blocks: tuple[int, ...]  # per group: released by windows / chunks
    num_query_tokens: int  # prompt tokens of admitted requests
    num_hit_tokens: int  # of those, served by the prefix cache
    num_preemptions: int
    peak_running: int  # requests running at once
    request_peak_blocks: dict[str, tuple[int, ...]]  # per request, per group: most blocks held at once
    request_lens: dict[str, int]  # per request: final length (prompt + output tokens)


@dataclass(frozen=True)
class StateMeasurements:
    """One recurrent group's states during a run, measured on the allocated views and the pool."""

    group_id: int
    state_bytes: int  # one block of state, all the group's layers: the views' bytes, not the spec's
    checkpoints_kept: int  # the group's cached (hashed) state blocks when the run ended
    state_copies: int  # state blocks the runner copied (new live blocks, restored checkpoints)
    checkpoints_restored: int  # of those, checkpoints copied in for a prefix hit


@dataclass(frozen=True)
class RunOutcome:
    generations: list[Generation]
    timings: StepTimings
    cache: CacheMeasurements
    states: tuple[StateMeasurements, ...] = ()  # per recurrent group, layout order


class _Recorder:
    """Per-step measurements of the scheduler's requests and the manager's pools."""

    def __init__(self, kv: KVCacheManager, requests: dict[str, Request]) -> None:
        self.kv = kv
        self.requests = requests
        num_groups = len(kv.layout.groups)
        self.peak_groups = [0] * num_groups
        self.peak_pools = [0] * len(kv.layout.pools)
        self.peak_running = 0
        self.request_peaks: dict[str, list[int]] = {}

    def after_schedule(self, scheduler: Scheduler, output: SchedulerOutput) -> None:
        """Record the step's peaks. A request's held blocks grow only when its table does (an
        admission or appended blocks, both in `output`); between those, releases only shrink
        them, so only those requests' tables are counted."""
        self.peak_running = max(self.peak_running, len(scheduler.running))
        for entry in output.scheduled:
            if not (entry.is_new or any(entry.block_ids)):
                continue
            peaks = self.request_peaks.setdefault(entry.request_id, [0] * len(self.peak_groups))
            for g, table in enumerate(self.kv.block_ids(self.requests[entry.request_id])):
                held = len(table) - table.count(NULL_BLOCK_ID)
                if held > peaks[g]:
                    peaks[g] = held
        stats = self.kv.stats()
        self.peak_groups = [max(a, b) for a, b in zip(self.peak_groups, stats.num_blocks_in_use)]
        in_use = [p.num_blocks - 1 - free for p, free in zip(self.kv.layout.pools, stats.num_free_blocks)]
        self.peak_pools = [max(a, b) for a, b in zip(self.peak_pools, in_use)]


def generate(runner: ModelRunner, prompts: Sequence[Sequence[int]], config: RunConfig,
             observer: RunObserver | None = None) -> RunOutcome:
    """Run every prompt to completion, concurrently; request ids are "0", "1", ... in order.

    Raises RequestTooLongError for a prompt of max_model_len tokens or more (no room for one
    output token) and OutOfBlocksError when one request cannot fit even alone.
    """
    observer = observer or RunObserver()
    layout = runner.layout
    max_len = layout.max_model_len
    kv = KVCacheManager(layout, CacheConfig(enable_caching=config.enable_prefix_caching))
    scheduler = Scheduler(kv, SchedulerConfig(config.max_num_batched_tokens, config.max_num_seqs))
    runner.reset()
    sampler = Sampler(config.sampling, runner.device)
    requests: dict[str, Request] = {}
    generations: dict[str, Generation] = {}
    for i, prompt in enumerate(prompts):
        if len(prompt) >= max_len:
            raise RequestTooLongError(f"prompt {i}: {len(prompt)} tokens leave no room for output within "
                                      f"max_model_len {max_len}")
        request = Request(str(i), prompt, max_output_len=min(config.max_new_tokens, max_len - len(prompt)))
        requests[request.request_id] = request
        generations[request.request_id] = Generation(request.request_id, tuple(prompt))
        scheduler.add_request(request)
    recorder = _Recorder(kv, requests)
    copies_before, restores_before = list(runner.state_copies), list(runner.state_restores)
    total_prompt = sum(len(p) for p in prompts)
    prefill_done = prefill_tokens = decode_tokens = 0
    prefill_s = decode_s = 0.0
    start = time.perf_counter()
    while scheduler.has_unfinished_requests:
        t0 = time.perf_counter()
        output = scheduler.schedule()
        recorder.after_schedule(scheduler, output)
        step = runner.execute(output)
        if config.check_tables:
            check_block_tables(runner, kv, requests, output)
        sampled = dict(zip(step.request_ids, sampler.sample(step.logits)))
        for request_id, token in sampled.items():
            request = requests[request_id]
            if token in config.eos_token_ids:  # finish now: the scheduler stops at max_output_len
                request.max_output_len = request.num_output_tokens + 1
        num_prompt = sum(
            max(0, min(e.positions.stop, requests[e.request_id].num_prompt_tokens) - e.positions.start)
            for e in output.scheduled)
        finished = scheduler.update_from_output(output, sampled)
        elapsed = time.perf_counter() - t0
        if num_prompt:
            prefill_tokens += num_prompt
            prefill_s += elapsed
            prefill_done = min(total_prompt, prefill_done + num_prompt)
            observer.on_prefill(prefill_done, total_prompt)
        else:
            decode_tokens += output.num_batched_tokens
            decode_s += elapsed
        for row, request_id in enumerate(step.request_ids):
            generation = generations[request_id]
            generation.output_token_ids.append(sampled[request_id])
            if config.record_logits:
                generation.logits.append(step.logits[row].cpu())
            observer.on_token(generation, sampled[request_id])
        for request in finished:
            generation = generations[request.request_id]
            last = generation.output_token_ids[-1]
            generation.finish_reason = ("eos" if last in config.eos_token_ids
                                        else "length" if request.num_output_tokens >= config.max_new_tokens
                                        else "max_model_len")
            observer.on_finish(generation)
    total_s = time.perf_counter() - start
    stats = kv.stats()
    if config.check_tables:  # the manager's own invariants too (a full walk of the pools: ~5 % of a short run)
        kv.check_integrity()
    cache = CacheMeasurements(
        peak_blocks_in_use=tuple(recorder.peak_groups),
        peak_pool_blocks_in_use=tuple(recorder.peak_pools),
        early_released_blocks=stats.num_early_released_blocks,
        num_query_tokens=stats.num_query_tokens,
        num_hit_tokens=stats.num_hit_tokens,
        num_preemptions=scheduler.num_preemptions,
        peak_running=recorder.peak_running,
        request_peak_blocks={rid: tuple(p) for rid, p in recorder.request_peaks.items()},
        request_lens={rid: r.num_tokens for rid, r in requests.items()},
    )
    timings = StepTimings(scheduler.num_steps, prefill_tokens, prefill_s, decode_tokens, decode_s, total_s)
    states = tuple(
        StateMeasurements(
            group_id=g,
            state_bytes=sum(s.bytes_per_block for s in runner.kv_cache.states.values() if s.group_id == g),
            checkpoints_kept=len(kv.pools[group.pool_id].cached_map(g)),
            state_copies=runner.state_copies[g] - copies_before[g],
            checkpoints_restored=runner.state_restores[g] - restores_before[g],
        )
        for g, group in enumerate(layout.groups) if group.kind is CacheKind.RECURRENT
    )
    return RunOutcome(list(generations.values()), timings, cache, states)


def check_block_tables(runner: ModelRunner, kv: KVCacheManager, requests: dict[str, Request],
                       output: SchedulerOutput) -> None:
    """The runner's tables equal the manager's on every entry the step may read (attention: from
    the group's first kept token on; recurrent: the live state block, the table's last entry),
    and those entries are real blocks. AssertionError."""
    for entry in output.scheduled:
        request = requests[entry.request_id]
        for g, group in enumerate(runner.layout.groups):
            size = group.block_size
            first_key = 0
            if group.kind is CacheKind.SLIDING:
                first_key = max(0, entry.positions.start - group.spec.window_len + 1)  # type: ignore[union-attr]
            elif group.kind is CacheKind.CHUNKED:
                chunk = group.spec.chunk_len  # type: ignore[union-attr]
                first_key = entry.positions.start // chunk * chunk
            lo, hi = first_key // size, -(-entry.positions.stop // size)
            if group.kind is CacheKind.RECURRENT:
                lo = hi - 1
            mine = runner.tables.table(entry.request_id, g)[lo:hi]
            theirs = list(kv.block_ids(request)[g][lo:hi])
            assert mine == theirs, f"request {entry.request_id} group {g}: runner {mine} != manager {theirs}"
            assert NULL_BLOCK_ID not in theirs, (
                f"request {entry.request_id} group {g}: null block in {theirs}")
