"""CacheConfig: the options of the KV cache manager, bundled (no flag soup).

Two operating modes: hkv's (the defaults) and vLLM's (`CacheConfig.vllm()`, the oracle's mode,
see vllm_compat.py for the switches it sets).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hkv.runtime.kv_cache.vllm_compat import CacheTiming, DuplicateBlocks, FreeOrder, SlidingRetention


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


@dataclass(frozen=True)
class CacheConfig:
    enable_caching: bool = True  # prefix caching: hash full blocks, reuse them on hits
    eviction_policy: EvictionPolicy = EvictionPolicy.GROUP_AWARE
    # The vLLM-compatibility switches (see vllm_compat.py): hkv's behaviour by default, vLLM's
    # in `vllm()`. Each may be set on its own (the tests vary them independently).
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
        """The vLLM-compatible mode (the oracle's): vLLM 0.32's KVCacheManager on attention
        layouts (full, sliding, chunked): same hits, same free-block counts and same block ids
        after every call, for a KVCacheConfig with dense retention
        (tests/oracle/vllm_side/test_manager_differential.py checks this). Plain LRU eviction
        and every switch of vllm_compat.py at vLLM's setting; `free_order`
        REQUEST_TAIL_FIRST matches vLLM's deferred free path instead of KVCacheManager.free."""
        return cls(enable_caching=enable_caching, eviction_policy=EvictionPolicy.LRU,
                   sliding_retention=SlidingRetention.ALL, cache_timing=CacheTiming.SCHEDULED,
                   duplicate_blocks=DuplicateBlocks.KEEP, free_order=free_order)
