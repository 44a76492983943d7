"""Eviction: the hooks through which the KV cache manager lets a policy order evictions.

A policy decides where the blocks a request gives back go in each pool's free queue (see
FreeBlockQueue's segments) and what it keeps track of to decide it; the pools only offer
block-level operations (release to a segment, move between segments). The KVCacheManager picks
the policy from `CacheConfig.eviction_policy` (EVICTION_BY_POLICY in kv_cache_manager.py) and
calls, per request: `note_admission` when it admits one, `release_early` (through the kind
managers) when a running request gives back blocks it no longer needs, `free_request` when it
stops; and `note_waiting` when the scheduler's waiting queue may have changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hkv.runtime.kv_cache.block_pool import BlockPool
from hkv.runtime.kv_cache.request_blocks import RequestBlocks
from hkv.runtime.request import Request

HitBlocks = tuple[Sequence[int], ...]  # per group: the block table prefix of a hit
HitOf = Callable[[Request], HitBlocks | None]  # a waiting request's hit blocks (a lookup)


class Eviction:
    """The interface; LruEviction and GroupAwareEviction implement it (a plain base class
    rather than an ABC or Protocol: mypyc compiles it and its subclasses to native classes)."""

    def note_admission(self, rb: RequestBlocks, hit_len: int) -> None:
        """`rb`'s request is admitted with a prefix hit of `hit_len` tokens (`rb.closed_hit_len`
        holds its full-attention hit); called before its hit is adopted, with caching on."""
        raise NotImplementedError

    def release_early(self, rb: RequestBlocks, pool: BlockPool, group_id: int, block_ids: list[int]) -> None:
        """Drop the running request's reference on `block_ids` of group `group_id` (out of its
        window, an old state; eviction priority order, nulls skipped) and queue the ones that
        become free."""
        raise NotImplementedError

    def free_request(self, rb: RequestBlocks) -> None:
        """Release every block the stopped (finished or preempted) request holds."""
        raise NotImplementedError

    def note_waiting(self, first: Sequence[Request], hit_of: HitOf) -> None:
        """The scheduler's waiting queue may have changed: `first` are the requests at its head
        (up to CacheConfig.reserved_waiting_requests, head first; empty: nothing waits), and
        `hit_of` looks one up (a prefix-cache lookup: call it only for what is used)."""
        raise NotImplementedError
