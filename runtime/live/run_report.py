"""The report of a live run: the planner's prediction next to what the run measured.

"Agree" means every check below holds (each is listed with its numbers):

1. allocation: the bytes allocated for the pools equal the Layout's pool bytes;
2. per group: every request's peak blocks held at once (null blocks excluded) is at most the
   Layout's `blocks_per_request` at that request's final length;
3. per pool: the peak blocks in use never exceed the pool's num_blocks - 1 (null excluded);
4. per recurrent group: the bytes of one block of state, measured on the allocated views, equal
   the plan's (spec.state_bytes x layers);
5. with --fill, for copies of the first prompt + max_new_tokens: the sustained concurrency the
   planner predicts equals the one measured by running copies through the real model
   (sustained_fill.py), and checks 2-3 hold on the run of that many copies.

Capacity is shown as three figures at the longest request: logged (vLLM's "Maximum
concurrency"), sustained (the planner's prediction; measured only with --fill) and the physical
limit (pool bytes / ideal bytes per request).
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.cache_spec import StateCacheSpec
from hkv.planner.layout import Layout
from hkv.planner.capacity.sustained import SustainedSetup, predict_sustained
from hkv.runtime.live.live_run import RunOutcome, StateMeasurements
from hkv.runtime.live.run_config import RunConfig
from hkv.runtime.live.sustained_fill import FillOutcome


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
class StateReport:
    """A recurrent group's states: planned next to measured."""

    group_id: int
    variant: str  # mamba1 | mamba2 | gdn | lightning | short_conv
    num_layers: int
    pool_id: int
    planned_state_bytes: int  # one block, all the group's layers (spec.state_bytes x layers)
    measured_state_bytes: int  # the same, from the allocated views
    planned_states_per_request: int  # num_state_blocks
    peak_states_per_request: int  # most state blocks one request held at once
    checkpoints_kept: int
    state_copies: int
    checkpoints_restored: int


@dataclass(frozen=True)
class FillTrialReport:
    num_requests: int
    peak_running: int
    num_preemptions: int
    num_finished: int
    clean: bool


@dataclass(frozen=True)
class FillReport:
    prompt_len: int
    output_len: int
    predicted_sustained: int
    measured_sustained: int
    capped: bool  # max_num_seqs copies ran clean: the pools may sustain more
    trials: tuple[FillTrialReport, ...]


@dataclass(frozen=True)
class RunReport:
    layout: str
    kv_memory_bytes: int  # the budget the plan was made for
    allocated_bytes: int
    max_model_len: int
    in_flight_tokens: int
    request_len: int  # longest request: prompt + max_new_tokens (at most max_model_len)
    max_concurrency: float  # vLLM's figure at request_len (logged_concurrency's alias)
    max_num_requests: int  # requests of request_len that fit at once, each at its worst case
    logged_concurrency: float
    sustained_concurrency: int  # predicted, for requests of request_len (output: max_new_tokens)
    physical_limit_concurrency: float
    groups: tuple[GroupReport, ...]
    pools: tuple[PoolReport, ...]
    states: tuple[StateReport, ...]  # per recurrent group
    num_query_tokens: int
    num_hit_tokens: int
    num_preemptions: int
    fill: FillReport | None
    checks: tuple[Check, ...]
    agree: bool


def build_report(layout: Layout, kv_memory_bytes: int, allocated_bytes: int, request_lens: tuple[int, int],
                 config: RunConfig, run: RunOutcome, fill: FillOutcome | None = None) -> RunReport:
    """`request_lens`: (prompt_len, output_len) of the longest request, prompt + output at most
    max_model_len; `config` the run's (its step budget and max_num_seqs set the sustained figure)."""
    request_len = sum(request_lens)
    setup = SustainedSetup(config.max_num_batched_tokens, config.max_num_seqs, request_lens[1], request_len)
    planned = sum(p.num_bytes for p in layout.pools)
    checks = [Check("allocated bytes == layout pool bytes", planned, allocated_bytes,
                    planned == allocated_bytes)]
    checks += _block_checks(layout, run, "")
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
    states = tuple(_state_report(layout, m, groups[m.group_id]) for m in run.states)
    checks += [Check(f"group {s.group_id} ({s.variant}): state bytes per block == plan", s.planned_state_bytes,
                     s.measured_state_bytes, s.planned_state_bytes == s.measured_state_bytes) for s in states]
    fill_report = None
    if fill is not None:
        fill_report = FillReport(
            fill.prompt_len, fill.output_len, fill.predicted, fill.measured, fill.capped,
            tuple(FillTrialReport(t.num_requests, t.peak_running, t.num_preemptions, t.num_finished, t.is_clean)
                  for t in fill.trials))
        seq_len = fill.prompt_len + fill.output_len
        checks.append(Check(f"fill: sustained concurrency at {seq_len:,} tokens (copies at once, no preemption)",
                            fill.predicted, fill.measured, fill.predicted == fill.measured))
        if fill.run is not None:
            checks += _block_checks(layout, fill.run, f"fill ({fill.measured} copies): ")
    return RunReport(
        layout=layout.name, kv_memory_bytes=kv_memory_bytes, allocated_bytes=allocated_bytes,
        max_model_len=layout.max_model_len, in_flight_tokens=layout.in_flight_tokens, request_len=request_len,
        max_concurrency=layout.max_concurrency(request_len) if layout.groups else 0.0,
        max_num_requests=layout.max_num_requests(request_len),
        logged_concurrency=layout.max_concurrency(request_len) if layout.groups else 0.0,
        sustained_concurrency=predict_sustained(layout, setup),
        physical_limit_concurrency=layout.physical_limit_concurrency(request_len),
        groups=groups, pools=pools, states=states, num_query_tokens=run.cache.num_query_tokens,
        num_hit_tokens=run.cache.num_hit_tokens, num_preemptions=run.cache.num_preemptions,
        fill=fill_report, checks=tuple(checks), agree=all(c.ok for c in checks),
    )


def _state_report(layout: Layout, measured: StateMeasurements, group_report: GroupReport) -> StateReport:
    group = layout.groups[measured.group_id]
    spec = group.spec
    assert isinstance(spec, StateCacheSpec) and group.num_state_blocks is not None
    return StateReport(
        group_id=measured.group_id, variant=spec.variant, num_layers=group.num_layers, pool_id=group.pool_id,
        planned_state_bytes=spec.state_bytes * group.num_layers, measured_state_bytes=measured.state_bytes,
        planned_states_per_request=group.num_state_blocks,
        peak_states_per_request=group_report.peak_blocks_per_request,
        checkpoints_kept=measured.checkpoints_kept, state_copies=measured.state_copies,
        checkpoints_restored=measured.checkpoints_restored,
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
