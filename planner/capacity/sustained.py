"""Sustained concurrency, predicted: how many max-length requests run at once without a preemption.

The question: N requests of `max_model_len` tokens (prompt + output, see `split_request`)
arrive together; the scheduler admits a waiting request when slots for its whole prompt fit
(vLLM 0.32's admission, `scheduler_reserve_full_isl`: per group cdiv(prompt, b), sliding and
chunked groups capped at `blocks_per_request`, see KVCacheGroup.admission_blocks; not the worst
case of the whole sequence), gives no request more than the Layout's in-flight tokens T in a step,
allocates per step, and preempts when a running request cannot grow. *Sustained* is the largest N
for which every request is running at the same time (peak running == N) and no preemption
happens. The runtime measures it by really allocating (hkv.runtime.simulation.sustained_probe);
this module predicts it from the Layout alone.

The model (pure arithmetic, no allocator):

- Steady per-request blocks, per group, for a request that computed c tokens and has slots up
  to t tokens (`held_blocks`): full cdiv(t, b); sliding cdiv(t, b) - (c - W + 1)+ // b (the
  window's blocks plus the blocks the step's chunk spans, window/block misalignment included);
  chunked cdiv(t, b) - (c // C x C) // b; recurrent one live state, plus one more while a step
  crosses a state boundary when the group keeps >= 2 state blocks. At the end of a request
  (c = L - 2, t = L - 1: the last token is sampled, never computed) full attention holds
  cdiv(L - 1, b), not cdiv(L, b).
- The transient of one step's token budget: the step's `max_num_batched_tokens` tokens go first
  to the running requests (one decode token each, then the unfinished prefill), then to waiting
  requests in arrival order; the chunk's blocks are charged once, to the requests that prefill in
  that step, not to every request as vLLM's logged T = 2 x max_num_batched_tokens is.
- Block rounding is in the cdivs; each pool gives num_blocks - 1 usable blocks (the null block);
  padding slots are already in the pool's bytes per block, so they cost blocks, never counts.
- Order within a step matters and is kept: each scheduled request first releases what fell out
  of its window (to its computed tokens), then allocates its new slots; finished requests free
  everything after the step.

Because the token schedule does not depend on memory until the first refusal, walking it with
these counts gives exactly the step where the real allocator first runs out.

Long decodes are skipped, not walked: once nobody waits and every running request decodes (one
token each per step) and has made its first decode step (that step releases the last prefill
chunk's window blocks request by request, interleaved with the others' growth, and is walked:
jumping it released them all at once and missed a preemption on Gemma-3-27B at 8k), each
request's blocks after release and after allocation are functions h(c) of its computed tokens
with h(c + P) >= h(c) for P = lcm(block sizes, chunk lengths) (full attention grows, sliding
grows then repeats every block, chunked and recurrent repeat). So a step that runs out is
followed, P steps later, by one that runs out too: only the last P + 1 steps before the first
finish can be the first to fail, and the walk jumps to them.

The search over N (`largest_clean`) gallops from a guess (usable blocks / a request's blocks at
its end) towards the boundary, doubling its step, and bisects. Preemptions are not monotone in N
in general (a larger N staggers prefills differently), so the bisection returns *a* boundary: a
clean N whose successor is not clean (or the cap).
tests/runtime/simulation/test_sustained_prediction.py checks on the tiny grid that it equals the
ramp (the first N that is not clean, minus one); a plain ramp was too slow for `hkv plan` on
long contexts (80 trials of 200 requests). The runtime measures with the same search, so
prediction and measurement answer the same question.

With a request waiting during a pure decode phase the same h(c + P) >= h(c) argument says
free blocks only shrink period over period: when the head has not fitted for P + 1 steps it
will not before the first finish, so the N requests will not all run at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import lcm

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import Layout
from hkv.planner.capacity.sustained_counts import collapsed, decode_changes, grow_request, held_blocks
from hkv.planner.capacity.sustained_walk import SharedWalk, WalkRules, walk

OUTPUT_LEN_DIVISOR = 8  # default split: output = max_model_len // 8, prompt = the rest


def default_output_len(max_model_len: int) -> int:
    """The default output length of a max-length request: max_model_len // 8 (at least 1).

    A chat/RAG-like 7:1 prompt:output split; the same default for the planner and the runtime."""
    return max(1, max_model_len // OUTPUT_LEN_DIVISOR)


def split_request(max_model_len: int, output_len: int | None) -> tuple[int, int]:
    """(prompt_len, output_len) of a max-length request. Raises ValueError unless
    1 <= output_len < max_model_len."""
    out = default_output_len(max_model_len) if output_len is None else output_len
    if not 1 <= out < max_model_len:
        raise ValueError(f"output_len must be in [1, {max_model_len - 1}], got {out}")
    return max_model_len - out, out


@dataclass(frozen=True)
class SustainedSetup:
    """The engine settings the sustained figure depends on, and the request it is counted in."""

    max_num_batched_tokens: int
    max_num_seqs: int
    output_len: int | None = None  # None: default_output_len(request length)
    request_len: int | None = None  # prompt + output; None: the layout's max_model_len

    def request_lens(self, max_model_len: int) -> tuple[int, int]:
        """(prompt_len, output_len) of the request; raises ValueError as `split_request`, or
        when request_len is not in [2, max_model_len]."""
        seq_len = max_model_len if self.request_len is None else self.request_len
        if not 2 <= seq_len <= max_model_len:
            raise ValueError(f"request_len must be in [2, {max_model_len}], got {seq_len}")
        return split_request(seq_len, self.output_len)


def largest_clean(guess: int, cap: int, is_clean: Callable[[int], bool], floor: int = 0) -> int:
    """A clean N <= cap whose successor is not clean (or cap); 0 (no request, trivially clean)
    when 1 is not clean. Gallops from `guess` (clamped to [1, cap]) towards the boundary,
    doubling its step, then bisects (module docstring). `floor` (<= cap): an N the caller knows
    is clean, so nothing at or below it is probed."""
    assert 0 <= floor <= cap
    low, high = floor, cap + 1  # invariants: low is clean, high is not (cap + 1: nothing above counts)
    probe, step = min(max(guess, 1), cap), 1
    while low < probe < high:
        if is_clean(probe):
            low, probe = probe, probe + step
        else:
            high, probe = probe, probe - step
        step *= 2
    while high - low > 1:
        mid = (low + high) // 2
        if is_clean(mid):
            low = mid
        else:
            high = mid
    return low


def ramp_clean(cap: int, is_clean: Callable[[int], bool]) -> int:
    """The ramp: the largest N <= cap with is_clean(n) for every n in [1, N]. Slow; the tests
    compare it with largest_clean."""
    n = 0
    while n < cap and is_clean(n + 1):
        n += 1
    return n


def runs_clean(layout: Layout, num_requests: int, setup: SustainedSetup) -> bool:
    """Whether `num_requests` max-length requests arriving together all run at once and finish
    without a preemption, by the count model of the module docstring (sustained_walk.py walks it).

    The same walk as runs_clean_each, with the steady decoders grouped: a running request past its
    first decode step and past `decode_changes`'s base holds held_blocks(g, c - 1, c) and, step by
    step, changes its blocks by an amount that depends only on c % period. Running requests keep
    arrival order and an older one has computed at least as many tokens as a newer one, so the
    steady decoders are a prefix of the running list, finish in order, and are kept as a count per
    residue (computed = key + clock). A step's steady changes are applied in one sum when the free
    blocks cover every decrease in any order; otherwise they are walked one by one, in order."""
    if num_requests > setup.max_num_seqs or not layout.groups:
        return False
    if num_requests > setup.max_num_batched_tokens:
        return runs_clean_each(layout, num_requests, setup)  # decodes alone can exhaust a step
    return walk(walk_rules(layout, setup), num_requests)


def walk_rules(layout: Layout, setup: SustainedSetup) -> WalkRules:
    prompt_len, output_len = setup.request_lens(layout.max_model_len)
    return WalkRules.of(layout, prompt_len, output_len, setup.max_num_batched_tokens, setup.max_num_seqs)


def clean_probe(layout: Layout, setup: SustainedSetup, cap: int) -> Callable[[int], bool]:
    """is_clean(N) for N in [1, cap], equal to runs_clean(layout, N, setup): the probes of one search
    share the walk of `cap` requests where theirs coincide with it (sustained_walk.SharedWalk)."""
    if cap < 1 or not layout.groups or cap > setup.max_num_seqs or cap > setup.max_num_batched_tokens:
        return lambda n: runs_clean(layout, n, setup)
    return SharedWalk(walk_rules(layout, setup), cap).is_clean


def runs_clean_each(layout: Layout, num_requests: int, setup: SustainedSetup) -> bool:
    """runs_clean walked request by request at every step: the reference runs_clean must equal
    (tests, benchmarks/bench_plan_speed.py), and its path when decodes can exhaust a step's budget."""
    prompt_len, output_len = setup.request_lens(layout.max_model_len)
    seq_len = prompt_len + output_len
    if num_requests > setup.max_num_seqs or not layout.groups:
        return False
    # Groups of one spec in one pool hold the same blocks at every step: walk one, count it k times.
    groups, weights = collapsed(layout.groups)
    pool_index = {p.pool_id: i for i, p in enumerate(layout.pools)}
    gpool = [pool_index[g.pool_id] for g in groups]
    free = [max(0, p.num_blocks - 1) for p in layout.pools]
    computed = [0] * num_requests
    held = [[0] * len(groups) for _ in range(num_requests)]
    running: list[int] = []
    next_waiting = 0
    peak = 0
    # A group whose block covers the whole request (a state block of max_model_len tokens when
    # prefix caching is off) never crosses a block boundary within it: it leaves the period out,
    # or the period would span millions of tokens and no decode phase could be jumped.
    period = lcm(*(g.block_size for g in groups if g.block_size < seq_len),
                 *(g.spec.chunk_len for g in groups if g.kind is CacheKind.CHUNKED))  # type: ignore[union-attr]

    max_chunk = layout.in_flight_tokens  # a request never has more tokens in flight (hkv: its chunk cap)
    stalled_steps = 0  # consecutive pure-decode steps in which the waiting head did not fit

    def jump_decodes() -> None:
        """Skip all but the last period + 1 steps of a pure decode phase (module docstring)."""
        if next_waiting < num_requests or len(running) > setup.max_num_batched_tokens:
            return
        if any(computed[r] <= prompt_len for r in running):
            # Each request must have made one decode step: the first one releases the last
            # prefill chunk's window blocks, request by request, interleaved with the others'
            # growth, so it is walked, not jumped (held is held_blocks(g, c - 1, c) only after it).
            return
        num_steps = min(seq_len - 1 - computed[r] for r in running) - period - 1
        if num_steps <= 0:
            return
        for r in running:
            computed[r] += num_steps
            c = computed[r]
            for i, g in enumerate(groups):
                after = held_blocks(g, c - 1, c)  # after the skipped step that computed c - 1
                free[gpool[i]] += (held[r][i] - after) * weights[i]
                held[r][i] = after

    steady_from, changing = decode_changes(groups, period)
    # The admission gate (vLLM 0.32's scheduler_reserve_full_isl): a waiting request, holding
    # nothing, is admitted only when slots for its whole prompt fit, per pool.
    gate_need = [0] * len(free)
    for i, g in enumerate(groups):
        gate_need[gpool[i]] += g.admission_blocks(prompt_len, layout.in_flight_tokens) * weights[i]

    def try_allocate(r: int, new_len: int) -> bool:
        return grow_request(groups, weights, gpool, free, held[r], computed[r], min(computed[r] + new_len, seq_len))

    while running or next_waiting < num_requests:
        jump_decodes()
        budget = setup.max_num_batched_tokens
        scheduled: list[tuple[int, int]] = []
        for r in running:
            if budget == 0:
                break
            c = computed[r]
            if c > prompt_len and c >= steady_from and c % period not in changing:
                scheduled.append((r, 1))  # a decode step that releases and allocates nothing
                budget -= 1
                continue
            tokens = prompt_len if c < prompt_len else c + 1
            new_len = min(tokens - c, budget, max_chunk)
            if not try_allocate(r, new_len):
                return False  # the real scheduler preempts here
            scheduled.append((r, new_len))
            budget -= new_len
        num_ran = len(scheduled)  # with budget left, every running request was scheduled above
        while next_waiting < num_requests and budget > 0 and len(running) < setup.max_num_seqs:
            r = next_waiting
            new_len = min(prompt_len, budget, max_chunk)
            if any(n > f for n, f in zip(gate_need, free)) or not try_allocate(r, new_len):
                pure_decode = all(computed[q] >= prompt_len for q, _ in scheduled[:num_ran])
                stalled_steps = stalled_steps + 1 if pure_decode else 0
                if stalled_steps > period:
                    return False  # it cannot fit before the first finish (module docstring)
                break  # waits: not a preemption, but the requests will not all run at once
            running.append(r)
            next_waiting += 1
            stalled_steps = 0
            scheduled.append((r, new_len))
            budget -= new_len
        if not scheduled:
            return False  # stalled: the first request does not fit alone
        peak = max(peak, len(running))
        for r, new_len in scheduled:
            computed[r] += new_len
        # A request emits a token when its step ends at its last token; it finishes after its
        # output_len-th (its computed tokens then reach seq_len - 1).
        done = [r for r in running if computed[r] >= seq_len - 1]
        for r in done:
            running.remove(r)
            for i in range(len(groups)):
                free[gpool[i]] += held[r][i] * weights[i]
                held[r][i] = 0
    return peak == num_requests


def search_guess(layout: Layout, seq_len: int | None = None) -> int:
    """Where largest_clean starts: usable blocks over the blocks a request of `seq_len` tokens
    (default max_model_len) holds at its end (slots for seq_len - 1 tokens), the tightest pool."""
    seq_len = layout.max_model_len if seq_len is None else seq_len
    end_blocks = {p.pool_id: 0 for p in layout.pools}
    for g in layout.groups:
        end_blocks[g.pool_id] += held_blocks(g, seq_len - 2, seq_len - 1)
    return min((max(0, p.num_blocks - 1) // end_blocks[p.pool_id]
                for p in layout.pools if end_blocks[p.pool_id]), default=1)


def predict_sustained(layout: Layout, setup: SustainedSetup, bounds: tuple[int, int] | None = None) -> int:
    """The predicted sustained concurrency (see the module docstring); 0 when one request alone
    does not fit; at most setup.max_num_seqs. `bounds` (floor, cap): what the caller already
    knows, e.g. from the same layout on a smaller (floor) or larger (cap) budget: more blocks
    never preempt where fewer did, so the answer lies in [floor, cap]."""
    floor, cap = (0, setup.max_num_seqs) if bounds is None else (bounds[0], min(bounds[1], setup.max_num_seqs))
    guess = search_guess(layout, sum(setup.request_lens(layout.max_model_len)))
    return largest_clean(max(guess, floor), cap, clean_probe(layout, setup, cap), floor=min(floor, cap))
