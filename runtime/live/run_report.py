"""The report of a live run: the planner's prediction next to what the run measured.

"Agree" means every check below holds (each is listed with its numbers):

1. allocation: the bytes allocated for the pools equal the Layout's pool bytes;
2. per group: every request's peak blocks held at once (null blocks excluded) is at most the
   Layout's `blocks_per_request` at that request's final length (the admission formula);
3. per pool: the peak blocks in use never exceed the pool's num_blocks - 1 (null excluded);
4. with --fill, at L = prompt + max_new_tokens: the copies the real pools admitted with
   worst-case reservations equal `layout.max_num_requests(L)`, and running that many copies
   through the model finishes every one of them without a preemption (checks 2-3 also apply
   to that run).
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.layout import Layout
from hkv.runtime.live.live_run import FillOutcome, RunOutcome


@dataclass(frozen=True)
class Check:
    name: str
    predicted: int  # the bound (or the expected count)
    measured: int
    ok: bool


@dataclass(frozen=True)
class GroupReport:
    group_id: int
    kind: str
    num_layers: int
    block_size: int
    pool_id: int
    predicted_blocks_per_request: int  # at the longest request length
    peak_blocks_per_request: int  # most blocks one request held at once
    peak_blocks_in_use: int  # all requests together
    early_released_blocks: int  # released by windows / chunks


@dataclass(frozen=True)
class PoolReport:
    pool_id: int
    kind: str
    num_blocks: int  # null block included
    bytes_per_block: int
    peak_blocks_in_use: int


@dataclass(frozen=True)
class FillReport:
    seq_len: int
    predicted: int
    admitted: int
    finished: int
    peak_running: int  # copies resident (running) at once in the model run
    num_preemptions: int


@dataclass(frozen=True)
class RunReport:
    layout: str
    kv_memory_bytes: int  # the budget the plan was made for
    allocated_bytes: int
    max_model_len: int
    in_flight_tokens: int
    request_len: int  # longest request: prompt + max_new_tokens (at most max_model_len)
    max_concurrency: float  # vLLM's figure at request_len
    max_num_requests: int  # admission-gate capacity at request_len
    groups: tuple[GroupReport, ...]
    pools: tuple[PoolReport, ...]
    num_query_tokens: int
    num_hit_tokens: int
    num_preemptions: int
    fill: FillReport | None
    checks: tuple[Check, ...]
    agree: bool


def build_report(layout: Layout, kv_memory_bytes: int, allocated_bytes: int, request_len: int,
                 run: RunOutcome, fill: FillOutcome | None = None) -> RunReport:
    planned = sum(p.num_bytes for p in layout.pools)
    checks = [Check("allocated bytes == layout pool bytes", planned, allocated_bytes,
                    planned == allocated_bytes)]
    runs = [("", run)] + ([("fill: ", fill.run)] if fill is not None and fill.run is not None else [])
    for prefix, outcome in runs:
        checks += _block_checks(layout, outcome, prefix)
    groups = tuple(
        GroupReport(
            group_id=g, kind=group.kind.value, num_layers=group.num_layers, block_size=group.block_size,
            pool_id=group.pool_id,
            predicted_blocks_per_request=group.blocks_per_request(request_len, layout.in_flight_tokens),
            peak_blocks_per_request=max((p[g] for p in run.cache.request_peak_blocks.values()), default=0),
            peak_blocks_in_use=run.cache.peak_blocks_in_use[g],
            early_released_blocks=run.cache.early_released_blocks[g],
        )
        for g, group in enumerate(layout.groups)
    )
    pools = tuple(PoolReport(p.pool_id, p.kind, p.num_blocks, p.bytes_per_block, peak)
                  for p, peak in zip(layout.pools, run.cache.peak_pool_blocks_in_use))
    fill_report = None
    if fill is not None:
        finished = peak_running = preemptions = 0
        if fill.run is not None:
            finished = sum(1 for g in fill.run.generations if g.finish_reason is not None)
            peak_running = fill.run.cache.peak_running
            preemptions = fill.run.cache.num_preemptions
        fill_report = FillReport(fill.seq_len, fill.predicted, fill.admitted, finished, peak_running,
                                 preemptions)
        checks += [
            Check(f"fill: copies admitted at {fill.seq_len} tokens == max_num_requests", fill.predicted,
                  fill.admitted, fill.predicted == fill.admitted),
            Check("fill: copies run to completion", fill.admitted, finished, finished == fill.admitted),
            Check("fill: preemptions", 0, preemptions, preemptions == 0),
        ]
    return RunReport(
        layout=layout.name, kv_memory_bytes=kv_memory_bytes, allocated_bytes=allocated_bytes,
        max_model_len=layout.max_model_len, in_flight_tokens=layout.in_flight_tokens, request_len=request_len,
        max_concurrency=layout.max_concurrency(request_len) if layout.groups else 0.0,
        max_num_requests=layout.max_num_requests(request_len),
        groups=groups, pools=pools, num_query_tokens=run.cache.num_query_tokens,
        num_hit_tokens=run.cache.num_hit_tokens, num_preemptions=run.cache.num_preemptions,
        fill=fill_report, checks=tuple(checks), agree=all(c.ok for c in checks),
    )


def _block_checks(layout: Layout, run: RunOutcome, prefix: str) -> list[Check]:
    checks = []
    t = layout.in_flight_tokens
    for g, group in enumerate(layout.groups):
        # the request closest to (or furthest past) its bound stands for the group
        worst = None
        for rid, peaks in run.cache.request_peak_blocks.items():
            bound = group.blocks_per_request(run.cache.request_lens[rid], t)
            if worst is None or peaks[g] - bound > worst[1] - worst[0]:
                worst = (bound, peaks[g])
        if worst is not None:
            checks.append(Check(f"{prefix}group {g} ({group.kind.value}): blocks a request held <= "
                                "blocks_per_request(its length)", worst[0], worst[1], worst[1] <= worst[0]))
    for p, peak in zip(layout.pools, run.cache.peak_pool_blocks_in_use):
        usable = max(0, p.num_blocks - 1)
        checks.append(Check(f"{prefix}pool {p.pool_id}: blocks in use <= num_blocks - 1", usable, peak,
                            peak <= usable))
    return checks
