"""CacheConfig: the options of the KV cache manager, bundled (no flag soup)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class EvictionPolicy(str, Enum):
    """Which cached-free block is evicted first when the pool runs out of free blocks.

    LRU: vLLM's policy. One LRU across groups; a finished request's blocks go to its back in
        `CacheConfig.free_order`; blocks released early go to the back at once.
    GROUP_AWARE: cached blocks a running request releases early (sliding windows, Mamba
        checkpoints) are protected from admissions and evicted after every other cached block
        until the request stops if its prefix hit ends at a branch point (where another
        request's hit ended: a shared system prompt), and evicted before every other cached
        block otherwise (a conversation's past junction); a stopped request's blocks go to the
        back by descending token position across all groups, its protected blocks last (see
        group_aware_eviction.py).
    """

    LRU = "lru"
    GROUP_AWARE = "group_aware"


class SlidingRetention(str, Enum):
    """Which full blocks of a sliding-window group are registered in the prefix cache.

    ALL: every full block (dense), as full attention. vLLM's behaviour with a KVCacheConfig whose
        prefix_cache_retention_interval is None (the dataclass default).
    HIT_POINTS: only the W - 1 tokens before the lengths where a later request is expected to
        hit (close to vLLM's engine default, retention interval 0): where full attention already
        hit further than the hybrid hit (a shared-prefix junction), the prompt end (a resend) and
        the length the request reached (the next turn of a conversation). Other sliding blocks
        can never serve a hit on their own, so they are freed uncached and reused first.
    """

    ALL = "all"
    HIT_POINTS = "hit_points"


class CacheTiming(str, Enum):
    """When a full block is registered in the prefix cache.

    COMPUTED: once its tokens are computed, i.e. by the request's next allocate_slots (or free)
        after the step that computed them. A request admitted in the same step cannot hit it.
    SCHEDULED: by the allocate_slots call that schedules its last token (vLLM): a request
        admitted later in the same step already hits it (its KV is written by the same forward
        pass, before attention reads it). Not supported with recurrent groups (vLLM's Mamba
        "align" mode defers those checkpoints; hkv does not model that).
    """

    COMPUTED = "computed"
    SCHEDULED = "scheduled"


class DuplicateBlocks(str, Enum):
    """What happens when a block fills up with the same prefix hash as a block already cached.

    DROP: one block per (hash, group). A new in-use copy stays unhashed (freed to the front, reused
        first); a cached-free copy loses its hash in favour of the new in-use copy.
    KEEP: every copy is registered (vLLM: block tables stay append-only, the map holds all copies);
        a hit takes the earliest registered copy still cached; each copy is evicted on its own.
    """

    DROP = "drop"
    KEEP = "keep"


class FreeOrder(str, Enum):
    """Order in which EvictionPolicy.LRU hands a stopped request's blocks to the free queue.

    REQUEST_TAIL_FIRST: the request's blocks of every group, in group order, reversed as one list
        (vLLM 0.33's free, and vLLM 0.32's deferred free): the last group's tail is evicted first.
    GROUP_BY_GROUP: group 0's blocks tail first, then group 1's, ... (vLLM 0.32's
        KVCacheManager.free): group 0's tail is evicted first.
    """

    REQUEST_TAIL_FIRST = "request_tail_first"
    GROUP_BY_GROUP = "group_by_group"


@dataclass(frozen=True)
class CacheConfig:
    enable_caching: bool = True  # prefix caching: hash full blocks, reuse them on hits
    eviction_policy: EvictionPolicy = EvictionPolicy.GROUP_AWARE
    sliding_retention: SlidingRetention = SlidingRetention.HIT_POINTS
    cache_timing: CacheTiming = CacheTiming.COMPUTED
    duplicate_blocks: DuplicateBlocks = DuplicateBlocks.DROP
    free_order: FreeOrder = FreeOrder.REQUEST_TAIL_FIRST  # LRU only
    # GROUP_AWARE only: the cached hits of up to this many requests at the head of the waiting
    # queue are reserved: evicted after every other unprotected cached block, the head's last
    # (see group_aware_eviction.py); 0: no reservation.
    reserved_waiting_requests: int = 8

    def __post_init__(self) -> None:
        if self.reserved_waiting_requests < 0:
            raise ValueError(f"reserved_waiting_requests must be >= 0, got {self.reserved_waiting_requests}")

    @classmethod
    def vllm(cls, enable_caching: bool = True, free_order: FreeOrder = FreeOrder.GROUP_BY_GROUP) -> CacheConfig:
        """vLLM 0.32's KVCacheManager on attention layouts (full, sliding, chunked): same hits,
        same free-block counts and same block ids after every call, for a KVCacheConfig with
        dense retention (tests/oracle/vllm_side/test_manager_differential.py checks this).
        `free_order` REQUEST_TAIL_FIRST matches its deferred free path instead."""
        return cls(enable_caching=enable_caching, eviction_policy=EvictionPolicy.LRU,
                   sliding_retention=SlidingRetention.ALL, cache_timing=CacheTiming.SCHEDULED,
                   duplicate_blocks=DuplicateBlocks.KEEP, free_order=free_order)
