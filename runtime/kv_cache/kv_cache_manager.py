"""KVCacheManager: the scheduler-facing facade over pools, managers and the coordinator.

Typical use by a scheduler (synchronous: one batch in flight):

    hit = manager.get_computed_blocks(request)              # new request: cached prefix
    if manager.can_admit(request, hit):                      # the whole prompt must fit
        new_blocks = manager.allocate_slots(request, n, hit.num_tokens, hit)
    ...                                                      # model computes the step
    new_blocks = manager.allocate_slots(request, 1)          # each later step (None: no room)
    manager.free(request)                                    # finished or preempted
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from math import lcm
from typing import NamedTuple

from hkv.planner.layout import BlockBound, Layout
from hkv.runtime.kv_cache.admission_gate import (
    admission_needs, blocked_needs, full_groups, promised_blocks, worst_case_counts)
from hkv.runtime.kv_cache.block_hash import BlockHasher
from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy
from hkv.runtime.kv_cache.cache_stats import CacheStats
from hkv.runtime.kv_cache.eviction import Eviction, HitBlocks
from hkv.runtime.kv_cache.group_aware_eviction import GroupAwareEviction
from hkv.runtime.kv_cache.kv_cache_coordinator import KVCacheCoordinator
from hkv.runtime.kv_cache.lanes import build_pools, lanes_of
from hkv.runtime.kv_cache.lru_eviction import LruEviction
from hkv.runtime.kv_cache.recurrent_state_manager import RecurrentStateManager
from hkv.runtime.kv_cache.request_blocks import RequestBlocks
from hkv.runtime.kv_cache.vllm_compat import CacheTiming, DuplicateBlocks
from hkv.runtime.request import Request

EvictionFactory = Callable[[KVCacheCoordinator, CacheConfig], Eviction]
EVICTION_BY_POLICY: dict[EvictionPolicy, EvictionFactory] = {
    EvictionPolicy.LRU: LruEviction,
    EvictionPolicy.GROUP_AWARE: GroupAwareEviction,
}


NewBlocks = tuple[Sequence[int], ...]  # per group: block ids allocated by one call


class ComputedBlocks(NamedTuple):
    """A prefix-cache hit: per group the block table prefix, and the tokens it covers."""

    block_ids: tuple[Sequence[int], ...]
    num_tokens: int


class KVCacheManager:
    """Allocates, caches and frees the blocks of every request over the pools of a Layout.

    `physical_block_ids` False says no tensor is indexed by the block ids (a simulated replay):
    the lockstep groups of hkv's own layouts are then held as lanes, one entry per position
    for all of them (lanes.py, LanePool), and their block ids are entry ids."""

    def __init__(self, layout: Layout, config: CacheConfig | None = None, *,
                 physical_block_ids: bool = True) -> None:
        self.layout = layout
        self.config = config or CacheConfig()
        self.max_model_len = layout.max_model_len
        self.in_flight_tokens = layout.in_flight_tokens
        num_groups = len(layout.groups)
        keep_duplicates = self.config.duplicate_blocks is DuplicateBlocks.KEEP
        lanes = lanes_of(layout, physical_block_ids, not keep_duplicates)
        self.pools = build_pools(layout, lanes, keep_duplicates)
        self.coordinator = KVCacheCoordinator(layout, self.pools, self.config, lanes)
        self._lane_of = self.coordinator.lane_of
        self.enable_caching = self.config.enable_caching
        # CacheTiming.SCHEDULED: blocks are cached by the allocate_slots that schedules them.
        self.cache_on_schedule = self.enable_caching and self.config.cache_timing is CacheTiming.SCHEDULED
        if self.cache_on_schedule and any(isinstance(m, RecurrentStateManager) for m in self.coordinator.managers):
            raise ValueError(f"layout {layout.name!r} has recurrent groups: CacheTiming.SCHEDULED "
                             "(vLLM's caching at schedule time) is not supported with them")
        self.hasher = BlockHasher(self.coordinator.hash_block_size)
        self.eviction = EVICTION_BY_POLICY[self.config.eviction_policy](self.coordinator, self.config)
        self.coordinator.set_eviction(self.eviction)
        self._empty_hit = ComputedBlocks(tuple(() for _ in range(num_groups)), 0)
        self.no_new_blocks: NewBlocks = tuple(() for _ in range(num_groups))
        self._requests: dict[str, RequestBlocks] = {}  # per request id: the requests holding blocks
        # Per request id, (closed_len, hit_len) of the last lookup of a request not holding
        # blocks: where its admission's hit points are (see find_hit_len); dropped at admission.
        self._lookups: dict[str, tuple[int, int]] = {}
        self._admission_needs: dict[tuple[int, int | None], list[int]] = {}  # admission_blocked's bounds
        self._num_query_tokens = 0
        self._num_hit_tokens = 0
        self._reserving = self.enable_caching and self.config.reserved_waiting_requests > 0
        # hkv's exact bounds leave no slack in the gate (vLLM's over-charged local groups do), and
        # its per-request prefill chunk keeps requests in prefill longer: its gate also counts
        # the blocks that admitted requests take next (see _promised_blocks).
        self._gate_counts_prefills = any(g.bound is BlockBound.EXACT for g in layout.groups)
        # (pool index, block size) of each full-attention group: the groups that grow in decode
        self._full_groups = full_groups(self.coordinator)
        self._num_finished = 0  # requests finished (note_finished) and their output tokens
        self._num_finished_output_tokens = 0

    @property
    def num_groups(self) -> int:
        return self.coordinator.num_groups

    @property
    def state_block_size(self) -> int | None:
        """Tokens between recurrent checkpoints (lcm over recurrent groups) when prefix caching
        needs steps to end on them; None when no chunk alignment is needed."""
        sizes = [m.block_size for m in self.coordinator.managers if isinstance(m, RecurrentStateManager)]
        if not sizes or not self.enable_caching:
            return None
        return lcm(*sizes)

    def use_checkpoint_grid(self, interval_tokens: int) -> int | None:
        """Recurrent groups holding one live state (checkpoints in cached-free blocks of a state
        pool: the hkv and partitioned layouts) keep checkpoints only every `interval_tokens`
        (a multiple of state_block_size) and at hit points. Returns the grid, None when no group
        takes it (caching off, no such group: vLLM's layouts checkpoint every chunk end)."""
        managers = [m for m in self.coordinator.managers
                    if isinstance(m, RecurrentStateManager) and m.num_state_blocks == 1]
        if not managers or not self.enable_caching:
            return None
        for m in managers:
            m.checkpoint_interval = interval_tokens
        return interval_tokens

    def junction_len(self, request: Request) -> int:
        """Where full attention's cached prefix of the request ends (its last lookup's closed hit,
        kept at admission): a step stopping there leaves a checkpoint for the next request."""
        rb = self._requests.get(request.request_id)
        if rb is not None:
            return rb.closed_hit_len
        return self._lookups.get(request.request_id, (0, 0))[0]

    # ---- prefix cache ------------------------------------------------------------------------

    def get_computed_blocks(self, request: Request) -> ComputedBlocks:
        """The longest cached prefix of `request` that every group accepts, at most
        num_tokens - 1 tokens (the last token is recomputed for its logits). Reads only: no
        reference is taken until `allocate_slots` adopts the hit (it only notes where a later
        hit may land, for the request's admission). Empty when caching is off."""
        return self.hit_blocks(request, self.find_hit_len(request))

    def find_hit_len(self, request: Request) -> int:
        """The length of `get_computed_blocks`'s hit (its lookup, with the same note for the
        request's admission), without building the hit's block lists."""
        if not self.enable_caching:
            return 0
        self.hasher.extend(request)
        max_len = min(request.num_tokens - 1, self.max_model_len)
        coordinator = self.coordinator
        closed_len = coordinator.closed_hit_len(request.block_hashes, max_len)
        hit_len = coordinator.find_longest_cache_hit(request.block_hashes, max_len, closed_len)
        self._lookups[request.request_id] = (closed_len, hit_len)
        return hit_len

    def hit_blocks(self, request: Request, hit_len: int) -> ComputedBlocks:
        """The hit of `hit_len` tokens that `find_hit_len` just found for the request."""
        if hit_len == 0:
            return self._empty_hit
        return ComputedBlocks(self.coordinator.hit_blocks(request.block_hashes, hit_len), hit_len)

    def reserve_waiting_hits(self, waiting: Iterable[Request]) -> None:
        """The scheduler's waiting queue (in admission order; requests holding nothing) may have
        changed: the eviction policy may keep the cached hits of its first
        `config.reserved_waiting_requests` requests, looking them up (`find_hit_len`, which
        extends their hashes) when it needs them (GROUP_AWARE, see
        GroupAwareEviction.note_waiting). Nothing happens with caching off or a limit of 0."""
        if self._reserving:
            first = tuple(islice(waiting, self.config.reserved_waiting_requests))
            self.eviction.note_waiting(first, self._hit_of)

    def drop_reservation(self) -> None:
        """Nothing waits any more: `reserve_waiting_hits` of an empty queue."""
        self.reserve_waiting_hits(())

    def _hit_of(self, request: Request) -> HitBlocks | None:
        """The prefix hit blocks of a waiting request, None without a hit."""
        hit_len = self.find_hit_len(request)
        return self.hit_blocks(request, hit_len).block_ids if hit_len else None

    # ---- admission and allocation ------------------------------------------------------------

    def can_admit(self, request: Request, computed: ComputedBlocks | None = None) -> bool:
        """Admission gate for a request holding nothing (vLLM 0.32's `scheduler_reserve_full_isl`):
        slots for all its tokens (num_tokens, at most max_model_len; a fresh request's prompt)
        must fit in free blocks, each group counted at
        `admission_blocks(min(num_tokens, max_model_len), in_flight_tokens)` (sliding and chunked
        groups capped at the Layout's per-request bound), less hit blocks other requests already
        hold. Blocks protected by
        group-aware eviction (released early by running requests) do not count as free unless
        they are part of the hit. With exact per-request bounds (the hkv layout) the blocks that
        admitted requests take next count as taken (`_promised_blocks`). Reads only."""
        seq_len = min(request.num_tokens, self.max_model_len)
        coordinator = self.coordinator
        needs = self._promised_blocks() if self._gate_counts_prefills else [0] * len(coordinator.pool_list)
        hit = computed.block_ids if computed is not None else None
        needs = admission_needs(coordinator, seq_len, self.in_flight_tokens, hit, needs)
        return coordinator.fits_unprotected(needs)

    def _promised_blocks(self) -> list[int]:
        """Per pool: blocks the running requests take next (admission_gate.promised_blocks),
        decoding requests expected to reach the mean output of the requests finished so far."""
        mean_output_len = self._num_finished_output_tokens // self._num_finished if self._num_finished else 0
        return promised_blocks(self.coordinator, self._requests.values(), self._full_groups, mean_output_len,
                               self.max_model_len, self.in_flight_tokens)

    def note_finished(self, request: Request) -> None:
        """The scheduler finished `request` (not a preemption): its output length feeds the
        admission gate's estimate of how far decoding requests still grow."""
        self._num_finished += 1
        self._num_finished_output_tokens += request.num_tokens - request.num_prompt_tokens

    def admission_blocked(self, request: Request, hit_len: int | None = None) -> bool:
        """True when `can_admit` fails for this request whatever its prefix hit (`hit_len` None:
        any hit `get_computed_blocks` may find) or with any blocks for a hit of `hit_len`
        tokens: the gate already fails when every non-null block of that hit is discounted (held
        by others). Reads only; cheap, so a scheduler may call it before the lookup (and before
        building the hit's blocks) of a request that waits."""
        key = (request.num_tokens, hit_len)
        needs = self._admission_needs.get(key)
        if needs is None:
            if len(self._admission_needs) > 100_000:
                self._admission_needs.clear()
            needs = blocked_needs(self.coordinator, request.num_tokens, hit_len, self.max_model_len,
                                  self.in_flight_tokens, self.enable_caching)
            self._admission_needs[key] = needs
        return not self.coordinator.fits_unprotected(needs)

    def allocate_slots(
        self,
        request: Request,
        num_new_tokens: int,
        num_new_computed_tokens: int = 0,
        new_computed_blocks: ComputedBlocks | None = None,
        num_lookahead_tokens: int = 0,
    ) -> NewBlocks | None:
        """Make the request hold slots for its computed tokens plus `num_new_tokens` (plus
        `num_lookahead_tokens` draft slots that are never cached), capped at max_model_len.

        First caches the request's fully computed blocks (CacheTiming.COMPUTED) and releases the
        blocks it no longer needs (out of window/chunk, old states; dead either way). Then either
        adopts the hit
        `new_computed_blocks` (covering `num_new_computed_tokens`; only for a request holding
        nothing) and allocates every group's new blocks, or, if any pool lacks free blocks,
        returns None with no block taken; with CacheTiming.SCHEDULED it then caches the blocks the
        step fills (its tokens up to num_tokens). On admission the eviction policy first notes the
        request's hit point (group-aware: whether its early releases are protected).
        Returns the new block ids per group. Does not change
        `request.num_computed_tokens`: the caller adds the hit and computed tokens.
        The identical object `no_new_blocks` is returned when nothing was allocated.
        """
        num_computed = request.num_computed_tokens
        rb = self._requests.get(request.request_id)
        if rb is None:
            is_admission = True
            rb = RequestBlocks(request, self.num_groups, self._lane_of)  # kept once the admission succeeds
        else:
            is_admission = False
            if new_computed_blocks is None and rb.is_steady(
                    num_computed, num_computed + num_new_tokens + num_lookahead_tokens):
                return self.no_new_blocks
        coordinator = self.coordinator
        if self.cache_on_schedule:
            coordinator.remove_skipped_blocks(rb, num_computed)
        else:
            self._cache_and_release(rb, num_computed)
        hit = None
        if new_computed_blocks is not None and new_computed_blocks.num_tokens:
            assert num_new_computed_tokens == new_computed_blocks.num_tokens
            hit = new_computed_blocks.block_ids
        else:
            assert num_new_computed_tokens == 0, "computed tokens without their blocks"
        base = num_computed + num_new_computed_tokens
        num_main = min(base + num_new_tokens, self.max_model_len)
        num_total = min(num_main + num_lookahead_tokens, self.max_model_len)
        if not coordinator.fits(coordinator.num_blocks_to_allocate(rb, hit, num_total, num_main)):
            return None
        if is_admission:
            self._admit(rb, num_new_computed_tokens)
        if hit is not None:
            coordinator.adopt_hit(rb, hit, num_new_computed_tokens)
        new_blocks = coordinator.allocate_new_blocks(rb, num_total, num_main)
        cached_len = None
        if self.cache_on_schedule:
            # vLLM: every token scheduled so far, at most num_tokens (never draft slots), rounded
            # down to the hit alignment (a no-op when every group has the same block size).
            self.hasher.extend(request)
            alignment = coordinator.hit_alignment
            cached_len = min(base + num_new_tokens, request.num_tokens) // alignment * alignment
            coordinator.cache_blocks(rb, cached_len)
        coordinator.set_steady_bounds(rb, base, self.enable_caching, cached_len)
        return new_blocks if any(new_blocks) else self.no_new_blocks

    def _admit(self, rb: RequestBlocks, hit_len: int) -> None:
        """Start holding `rb` for a request admitted with a hit of `hit_len` tokens: its hit
        points (from its last lookup: the full-attention junction, the prompt's resend length),
        the counters, then the eviction policy's note (with caching on)."""
        request = rb.request
        closed_len, lookup_len = self._lookups.pop(request.request_id, (0, 0))
        rb.closed_hit_len = closed_len
        # Full attention reaches further than the hybrid hit: a shared-prefix junction where the
        # other groups should keep what a later hit needs (SlidingRetention.HIT_POINTS).
        rb.expected_hit_lens = [closed_len] if closed_len > lookup_len else []
        alignment = self.coordinator.hit_alignment
        resend_len = (request.num_tokens - 1) // alignment * alignment  # same prompt again
        if resend_len > hit_len and resend_len not in rb.expected_hit_lens:
            rb.expected_hit_lens.append(resend_len)
        self._requests[request.request_id] = rb
        self._num_query_tokens += request.num_tokens
        self._num_hit_tokens += hit_len
        if self.enable_caching:
            self.eviction.note_admission(rb, hit_len)

    def surely_fit(self, requests: Sequence[Request], num_new_tokens: int) -> bool:
        """Whether `allocate_slots(request, num_new_tokens)` (no hit, no lookahead) of each of
        these requests (all holding blocks), one after another, is sure to succeed: the blocks
        they may pop together are free in every pool now (what they release first, or evict
        from the free queue, only helps). Reads only."""
        coordinator = self.coordinator
        totals = [0] * len(coordinator.pool_list)
        max_model_len = self.max_model_len
        for request in requests:
            rb = self._requests[request.request_id]
            num_tokens = min(request.num_computed_tokens + num_new_tokens, max_model_len)
            totals = [t + n for t, n in zip(totals, coordinator.max_blocks_to_pop(rb, num_tokens), strict=True)]
        return coordinator.fits(totals)

    def is_steady(self, request: Request, num_new_tokens: int) -> bool:
        """Whether `allocate_slots(request, num_new_tokens)` (no hit, no lookahead) would have
        nothing to cache, release or allocate and no state copy waits: the step needs nothing
        new (see RequestBlocks.is_steady). False for a request holding no blocks."""
        rb = self._requests.get(request.request_id)
        num_computed = request.num_computed_tokens
        return rb is not None and rb.is_steady(num_computed, num_computed + num_new_tokens)

    def reserve_worst_case(self, request: Request, seq_len: int) -> bool:
        """Capacity probe: make a request holding nothing hold, per group, its worst-case
        `blocks_per_request(seq_len, in_flight_tokens)` blocks popped from the real pools. The
        blocks carry no tokens (the table has no positional meaning); `free` returns them.
        Returns False, taking nothing, when they do not all fit."""
        assert request.request_id not in self._requests, "reserve_worst_case needs a request holding nothing"
        coordinator = self.coordinator
        counts, needs = worst_case_counts(coordinator, seq_len, self.in_flight_tokens)
        if not coordinator.fits(needs):
            return False
        rb = RequestBlocks(request, self.num_groups, self._lane_of)
        for m, count in zip(coordinator.managers, counts, strict=True):
            if m in coordinator.holders:  # a lane's followers share its lead's entries
                rb.block_ids[m.group_id].extend(m.pool.allocate(count, m.group_id))
        rb.num_cached_blocks = [len(b) for b in rb.block_ids]  # never cache these
        self._requests[request.request_id] = rb
        return True

    def _cache_and_release(self, rb: RequestBlocks, num_computed: int) -> None:
        if self.enable_caching and not self.cache_on_schedule:
            self.hasher.extend(rb.request)
            self.coordinator.cache_blocks(rb, num_computed)
        self.coordinator.remove_skipped_blocks(rb, num_computed)

    def free(self, request: Request) -> None:
        """Release every block of the request (finished or preempted) and forget it (its
        RequestBlocks and its last lookup). Fully computed blocks are cached first
        (CacheTiming.SCHEDULED: they were cached when scheduled), so they stay reusable until
        evicted. The request may be admitted again; freeing a request holding nothing is a
        no-op."""
        self._lookups.pop(request.request_id, None)
        rb = self._requests.pop(request.request_id, None)
        if rb is None:
            return
        request.steady_decode_until = 0
        if self.enable_caching:
            self.hasher.extend(request)
            num_computed = request.num_computed_tokens
            if not self.cache_on_schedule:
                self.coordinator.cache_blocks(rb, num_computed)
            alignment = self.coordinator.hit_alignment
            self.coordinator.cache_hit_point(rb, num_computed // alignment * alignment)
        self.eviction.free_request(rb)

    # ---- views for the scheduler and the model runner ----------------------------------------

    def block_ids(self, request: Request) -> Sequence[Sequence[int]]:
        """The request's live block table of each group (empty when it holds no blocks). Read
        it, never mutate it: it changes with the next allocate_slots or free."""
        rb = self._requests.get(request.request_id)
        return rb.block_ids if rb is not None else ()

    def request_blocks(self, request: Request) -> RequestBlocks:
        """The manager's record of a request holding blocks (KeyError otherwise): a view for
        checks and tests; the manager alone changes it."""
        return self._requests[request.request_id]

    def take_state_copies(self, request: Request) -> tuple[tuple[int, int, int], ...]:
        """The recurrent state copies (group id, source block, destination block) the request's
        allocations queued since the last call, in order; the queue is emptied. A runner must
        apply them before the request's next step reads its states."""
        rb = self._requests.get(request.request_id)
        if rb is None or not rb.state_copies:
            return ()
        copies = tuple(rb.state_copies)
        rb.state_copies.clear()
        request.steady_decode_until = rb.steady_decode_until()
        return copies

    # ---- accounting ----------------------------------------------------------------------------

    @property
    def usage(self) -> float:
        """Share of usable blocks (null blocks excluded) in use, over all pools."""
        usable = sum(p.num_usable_blocks for p in self.pools.values())
        free = sum(p.num_free_blocks for p in self.pools.values())
        return 1.0 - free / usable if usable else 0.0

    def stats(self) -> CacheStats:
        coordinator = self.coordinator
        return CacheStats(
            num_query_tokens=self._num_query_tokens,
            num_hit_tokens=self._num_hit_tokens,
            num_early_released_blocks=tuple(m.num_early_released_blocks for m in coordinator.managers),
            num_blocks_in_use=tuple(m.pool.num_in_use_by_group[m.group_id] for m in coordinator.managers),
            num_free_blocks=tuple(self.pools[p.pool_id].num_free_blocks for p in self.layout.pools),
            num_evictions=sum(p.num_evictions for p in self.pools.values()),
            num_protected_blocks=tuple(self.pools[p.pool_id].num_protected_blocks for p in self.layout.pools),
            usage=self.usage,
        )

    def check_integrity(self) -> None:
        """Every pool invariant against the references of the requests holding blocks, plus the
        per-request table invariants. Raises AssertionError."""
        references: dict[int, list[tuple[int, int]]] = {pool_id: [] for pool_id in self.pools}
        pool_of_group = [g.pool_id for g in self.layout.groups]
        for request_id, rb in self._requests.items():
            assert rb.request.request_id == request_id, f"request {request_id} keyed under another id"
            for block_id, gid in rb.check_integrity(self.num_groups):
                references[pool_of_group[gid]].append((block_id, gid))
            for m in self.coordinator.leads:
                m.check_request(rb)
        for pool_id, pool in self.pools.items():
            pool.check_integrity(references[pool_id])

