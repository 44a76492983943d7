"""The sustained-concurrency walk of sustained.py, as a state that steps, and the probes of one search
sharing the walk they have in common.

`runs_clean(layout, N, setup)` walks N max-length requests arriving together (sustained.py's module
docstring has the model). The walks of N and of M > N requests are the same walk until the first
step that starts with N requests admitted (the walk of N may then jump its decode phase, the walk of
M may not) or admits past N: before it, every step starts and ends with at most N admitted, the
M-walk's extra requests only wait, and a failed attempt to admit request N (0-based) changes
nothing either walk reads again. So `SharedWalk` walks M = the search's cap once, lazily, and keeps
the state at the start of the first step with each count of admitted requests; a probe of N resumes
from the snapshot of the largest count <= N and walks only the rest. Every probe is the plain walk
of N, so the search returns what it returned probing each N from scratch.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass
from math import lcm

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import KVCacheGroup, Layout
from hkv.planner.capacity.sustained_counts import collapsed, decode_changes, grow_request, held_blocks


@dataclass(frozen=True)
class WalkRules:
    """What every walk of one layout and setup shares: the collapsed groups and the per-step tables."""

    groups: tuple[KVCacheGroup, ...]
    weights: tuple[int, ...]  # how many of the layout's groups each collapsed group stands for
    gpool: tuple[int, ...]  # each group's pool index
    num_pools: int
    usable_blocks: tuple[int, ...]  # per pool: num_blocks - 1 (the null block)
    prompt_len: int
    seq_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    max_chunk: int  # a request's most tokens in flight (the layout's in_flight_tokens)
    period: int  # lcm of block sizes and chunk lengths (sustained.py)
    steady_from: int  # a decoder past this many computed tokens changes only at `step_change` residues
    step_change: tuple[tuple[int, tuple[int, ...]], ...]  # (residue, free-block change per pool)
    end_held: tuple[int, ...]  # per pool: what a steady decoder frees when it finishes
    gate_need: tuple[int, ...]  # per pool: what admitting a waiting request needs free
    # Per pool: the most blocks one request holds from its first decode step to its end; None where
    # finding it would take too long (then the decode phase is always walked).
    decode_max_held: tuple[int, ...] | None

    @classmethod
    def of(cls, layout: Layout, prompt_len: int, output_len: int, max_num_batched_tokens: int,
           max_num_seqs: int) -> WalkRules:
        seq_len = prompt_len + output_len
        groups, weights = collapsed(layout.groups)
        pool_index = {p.pool_id: i for i, p in enumerate(layout.pools)}
        gpool = tuple(pool_index[g.pool_id] for g in groups)
        num_pools = len(layout.pools)
        # A group whose block covers the whole request never crosses a block boundary in it: it stays
        # out of the period (a state block of max_model_len tokens would make it millions of tokens).
        period = lcm(*(g.block_size for g in groups if g.block_size < seq_len),
                     *(g.spec.chunk_len for g in groups if g.kind is CacheKind.CHUNKED))  # type: ignore[union-attr]
        steady_from, changing = decode_changes(groups, period)

        def pool_sums(computed_len: int, total_len: int) -> list[int]:
            return _pool_sums(groups, weights, gpool, num_pools, computed_len, total_len)

        step_change = []
        for residue in sorted(changing):
            c = steady_from + residue  # steady_from is a multiple of period
            before, after = pool_sums(c - 1, c), pool_sums(c, c + 1)
            change = tuple(b - a for b, a in zip(before, after))
            if any(change):
                step_change.append((residue, change))
        gate_need = [0] * num_pools
        for g, k, p in zip(groups, weights, gpool):
            gate_need[p] += g.admission_blocks(prompt_len, layout.in_flight_tokens) * k
        return cls(groups, weights, gpool, num_pools, tuple(max(0, p.num_blocks - 1) for p in layout.pools),
                   prompt_len, seq_len, max_num_batched_tokens, max_num_seqs, layout.in_flight_tokens, period,
                   steady_from, tuple(step_change), tuple(pool_sums(seq_len - 2, seq_len - 1)), tuple(gate_need),
                   _decode_max_held(groups, weights, gpool, num_pools, prompt_len, seq_len, steady_from, period))

    def pool_sums(self, computed_len: int, total_len: int) -> list[int]:
        """Per pool: the blocks one request holds after release to `computed_len` and allocation to
        `total_len` (held_blocks summed over groups)."""
        return _pool_sums(self.groups, self.weights, self.gpool, self.num_pools, computed_len, total_len)


def _pool_sums(groups: tuple[KVCacheGroup, ...], weights: tuple[int, ...], gpool: tuple[int, ...], num_pools: int,
               computed_len: int, total_len: int) -> list[int]:
    sums = [0] * num_pools
    for g, k, p in zip(groups, weights, gpool):
        sums[p] += held_blocks(g, computed_len, total_len) * k
    return sums


MAX_DECODE_SCAN = 20_000  # decode positions _decode_max_held may try per group


def _decode_max_held(groups: tuple[KVCacheGroup, ...], weights: tuple[int, ...], gpool: tuple[int, ...],
                     num_pools: int, prompt_len: int, seq_len: int, steady_from: int,
                     period: int) -> tuple[int, ...] | None:
    """Per pool, max over decode steps c in [prompt_len, seq_len - 2] of the request's blocks while the
    step allocates (held_blocks(g, c, c + 1), never below what it held before the step's release).
    Past steady_from a decoder's blocks repeat every period and never shrink period over period
    (sustained.py's docstring), so the last period holds the maximum of that stretch; below it every
    position is tried."""
    first_end = min(seq_len - 1, max(prompt_len, steady_from + period))
    positions = [*range(prompt_len, first_end), *range(max(first_end, seq_len - 1 - period), seq_len - 1)]
    if len(positions) > MAX_DECODE_SCAN:
        return None
    most = [0] * num_pools
    for g, k, p in zip(groups, weights, gpool):
        most[p] += k * max((held_blocks(g, c, c + 1) for c in positions), default=0)
    return tuple(most)


class WalkState:
    """The walk between steps. Steady decoders (past their first decode step and `steady_from`) are
    counts per residue (computed = key + clock); the others are `active`, in arrival order after the
    steady ones, with their computed tokens and blocks per group."""

    __slots__ = ("free", "computed", "held", "steady", "key", "per_residue", "active", "clock", "next_waiting",
                 "peak", "stalled_steps")

    def __init__(self, rules: WalkRules, num_requests: int) -> None:
        self.free = list(rules.usable_blocks)
        self.computed = [0] * num_requests
        self.held: dict[int, list[int]] = {}  # active requests' blocks per group
        self.steady: deque[int] = deque()
        self.key = [0] * num_requests
        self.per_residue = [0] * rules.period
        self.active: list[int] = []
        self.clock = 0
        self.next_waiting = 0
        self.peak = 0
        self.stalled_steps = 0

    def copy(self) -> WalkState:
        other = WalkState.__new__(WalkState)
        other.free = self.free[:]
        other.computed = self.computed[:]
        other.held = {r: h[:] for r, h in self.held.items()}
        other.steady = self.steady.copy()
        other.key = self.key[:]
        other.per_residue = self.per_residue[:]
        other.active = self.active[:]
        other.clock, other.next_waiting = self.clock, self.next_waiting
        other.peak, other.stalled_steps = self.peak, self.stalled_steps
        return other


def walk_step(rules: WalkRules, s: WalkState, num_requests: int) -> bool | None:
    """One scheduler step of `num_requests` requests (sustained.runs_clean's loop body): None while
    the walk goes on, else whether it ran clean (every request running at once, no preemption)."""
    if not (s.active or s.steady or s.next_waiting < num_requests):
        return s.peak == num_requests
    if s.next_waiting >= num_requests:  # the cheap half of _jump_decodes' condition, checked first
        if _decodes_cannot_run_out(rules, s):
            return s.peak == num_requests  # nobody waits, so the peak is final
        _jump_decodes(rules, s, num_requests)
    if s.steady and not _steady_step(rules, s):
        return False  # the real scheduler preempts here
    free, computed, held = s.free, s.computed, s.held
    prompt_len, seq_len, max_chunk = rules.prompt_len, rules.seq_len, rules.max_chunk
    groups, weights, gpool = rules.groups, rules.weights, rules.gpool
    budget = rules.max_num_batched_tokens - len(s.steady)
    scheduled: list[tuple[int, int]] = []
    prefilled = False  # whether a running request prefilled in this step
    for r in s.active:
        if budget == 0:
            break
        c = computed[r]
        tokens = prompt_len if c < prompt_len else c + 1
        new_len = min(tokens - c, budget, max_chunk)
        if not grow_request(groups, weights, gpool, free, held[r], c, min(c + new_len, seq_len)):
            return False
        prefilled = prefilled or c < prompt_len
        scheduled.append((r, new_len))
        budget -= new_len
    while s.next_waiting < num_requests and budget > 0 and len(s.steady) + len(s.active) < rules.max_num_seqs:
        r = s.next_waiting
        new_len = min(prompt_len, budget, max_chunk)
        mine = [0] * len(groups)
        if any(n > f for n, f in zip(rules.gate_need, free)) or not grow_request(
                groups, weights, gpool, free, mine, 0, min(new_len, seq_len)):
            s.stalled_steps = 0 if prefilled else s.stalled_steps + 1
            if s.stalled_steps > rules.period:
                return False  # it cannot fit before the first finish (sustained.py's docstring)
            break
        held[r] = mine
        s.active.append(r)
        s.next_waiting += 1
        s.stalled_steps = 0
        scheduled.append((r, new_len))
        budget -= new_len
    if not scheduled and not s.steady:
        return False  # stalled: the first request does not fit alone
    s.peak = max(s.peak, len(s.steady) + len(s.active))
    s.clock += 1
    for r, new_len in scheduled:
        computed[r] += new_len
    _finish(rules, s)
    return None


def _decodes_cannot_run_out(rules: WalkRules, s: WalkState) -> bool:
    """Whether every running request has made its first decode step and all of them together, each
    at the most it will hold until its end, fit the pools: then no step until the last finish can
    preempt, in whatever order it allocates (nobody waits: the caller checked)."""
    most = rules.decode_max_held
    if most is None or any(s.computed[r] <= rules.prompt_len for r in s.active):
        return False
    running = len(s.steady) + len(s.active)
    return all(running * n <= usable for n, usable in zip(most, rules.usable_blocks))


def _finish(rules: WalkRules, s: WalkState) -> None:
    """After a step: requests that emitted their last token leave; decoders past their first decode
    step and `steady_from` become steady."""
    seq_len, free, key = rules.seq_len, s.free, s.key
    while s.steady and key[s.steady[0]] + s.clock >= seq_len - 1:  # the oldest finishes first
        r = s.steady.popleft()
        s.per_residue[key[r] % rules.period] -= 1
        for p, n in enumerate(rules.end_held):
            free[p] += n
    computed, held, active = s.computed, s.held, s.active
    # the oldest active request has computed the most (arrival order), so it finishes first
    if active and computed[active[0]] >= seq_len - 1:
        for r in [r for r in active if computed[r] >= seq_len - 1]:
            active.remove(r)
            for i, n in enumerate(held.pop(r)):
                free[rules.gpool[i]] += n * rules.weights[i]
    while active and rules.prompt_len < computed[active[0]] and rules.steady_from <= computed[active[0]]:
        r = active.pop(0)
        mine = held.pop(r)
        assert all(mine[i] == held_blocks(g, computed[r] - 1, computed[r]) for i, g in enumerate(rules.groups))
        key[r] = computed[r] - s.clock
        s.per_residue[key[r] % rules.period] += 1
        s.steady.append(r)


def _steady_step(rules: WalkRules, s: WalkState) -> bool:
    """One decode step of every steady decoder; False on a preemption. The changes are applied as one
    sum when the free blocks cover every decrease in any order, else one by one in running order."""
    period, clock, per_residue, free = rules.period, s.clock, s.per_residue, s.free
    events = [(per_residue[(residue - clock) % period], change) for residue, change in rules.step_change]
    events = [(m, change) for m, change in events if m]
    if not events:
        return True
    pool_range = range(rules.num_pools)
    if all(free[p] + sum(m * min(0, change[p]) for m, change in events) >= 0 for p in pool_range):
        for m, change in events:
            for p in pool_range:
                free[p] += m * change[p]
        return True
    change_at = dict(rules.step_change)
    for r in s.steady:  # tight: in running order, as the scheduler does
        change = change_at.get((s.key[r] + clock) % period)
        if change is None:
            continue
        for p in pool_range:
            free[p] += change[p]
        if any(f < 0 for f in free):
            return False
    return True


def _jump_decodes(rules: WalkRules, s: WalkState, num_requests: int) -> None:
    """Skip all but the last period + 1 steps of a pure decode phase (sustained.py's docstring)."""
    computed, period = s.computed, rules.period
    if s.next_waiting < num_requests or any(computed[r] <= rules.prompt_len for r in s.active):
        return
    last = [computed[r] for r in s.active] + ([s.key[s.steady[0]] + s.clock] if s.steady else [])
    num_steps = rules.seq_len - 1 - max(last) - period - 1
    if num_steps <= 0:
        return
    free = s.free
    for r in s.active:
        computed[r] += num_steps
        c = computed[r]
        mine = s.held[r]
        for i, g in enumerate(rules.groups):
            after = held_blocks(g, c - 1, c)
            free[rules.gpool[i]] += (mine[i] - after) * rules.weights[i]
            mine[i] = after
    for j in range(period):
        if s.per_residue[j]:
            c = rules.steady_from + (j + s.clock) % period
            before, after = rules.pool_sums(c - 1, c), rules.pool_sums(c + num_steps - 1, c + num_steps)
            for p in range(rules.num_pools):
                free[p] += (before[p] - after[p]) * s.per_residue[j]
    s.clock += num_steps


def walk(rules: WalkRules, num_requests: int, state: WalkState | None = None) -> bool:
    """Whether `num_requests` requests run clean, walking from `state` (default: nobody admitted)."""
    s = WalkState(rules, num_requests) if state is None else state
    while (result := walk_step(rules, s, num_requests)) is None:
        pass
    return result


class SharedWalk:
    """Probes of one search (every N <= `cap`) over one layout and setup, sharing the walk of `cap`
    requests up to where each probe's own walk departs from it (module docstring)."""

    def __init__(self, rules: WalkRules, cap: int) -> None:
        self.rules = rules
        self.cap = cap
        self._state = WalkState(rules, cap)
        self._ended = False  # the cap walk returned (clean or not): no snapshot comes after
        self._counts: list[int] = []  # admitted counts with a snapshot, ascending
        self._snapshots: list[WalkState] = []

    def is_clean(self, num_requests: int) -> bool:
        assert 1 <= num_requests <= self.cap
        self._advance_past(num_requests)
        start = self._snapshots[bisect_right(self._counts, num_requests) - 1].copy()
        # the snapshot's arrays are the cap walk's (longer); the probe reads indices < num_requests only
        return walk(self.rules, num_requests, start)

    def _advance_past(self, num_requests: int) -> None:
        """Walk the cap walk until a step starts with more than `num_requests` admitted, or it ends."""
        s = self._state
        while not self._ended and (not self._counts or self._counts[-1] <= num_requests):
            if not self._counts or self._counts[-1] != s.next_waiting:
                self._counts.append(s.next_waiting)
                self._snapshots.append(s.copy())
            if self._counts[-1] > num_requests:
                return
            self._ended = walk_step(self.rules, s, self.cap) is not None
