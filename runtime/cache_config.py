"""CacheConfig: the options of the KV cache manager, bundled (no flag soup)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class EvictionPolicy(str, Enum):
    """Which cached-free block is evicted first when the pool runs out of free blocks.

    LRU: vLLM's policy. One LRU across groups; a finished request's blocks go to its back group
        after group, each tail first; blocks released early go to the back at once.
    GROUP_AWARE: cached blocks a running request releases early (sliding windows, Mamba
        checkpoints: the blocks that complete its hybrid hit) are protected from admissions and
        evicted after every other cached block until the request stops; a stopped request's
        blocks go to the back by descending token position across all groups, its protected
        blocks last (see group_aware_eviction.py).
    """

    LRU = "lru"
    GROUP_AWARE = "group_aware"


class SlidingRetention(str, Enum):
    """Which full blocks of a sliding-window group are registered in the prefix cache.

    ALL: every full block (dense), as full attention.
    HIT_POINTS: only the W - 1 tokens before the lengths where a later request is expected to
        hit (vLLM's default sparse retention): where full attention already hit further than
        the hybrid hit (a shared-prefix junction), the prompt end (a resend) and the length the
        request reached (the next turn of a conversation). Other sliding blocks can never serve
        a hit on their own, so they are freed uncached and reused first.
    """

    ALL = "all"
    HIT_POINTS = "hit_points"


@dataclass(frozen=True)
class CacheConfig:
    enable_caching: bool = True  # prefix caching: hash full blocks, reuse them on hits
    eviction_policy: EvictionPolicy = EvictionPolicy.GROUP_AWARE
    sliding_retention: SlidingRetention = SlidingRetention.HIT_POINTS
