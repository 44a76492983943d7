"""CacheConfig: the options of the KV cache manager, bundled (no flag soup)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class EvictionPolicy(str, Enum):
    """Which cached-free block is evicted first when the pool runs out of free blocks.

    LRU: vLLM's policy. A finished request's blocks go to the LRU back group after group, each
        group tail first; one LRU across groups, which knows nothing about hybrid hits.
    GROUP_AWARE: a finished request's blocks go to the LRU back in descending token position
        across all groups (the prefix shrinks from its tail in every group at once), and when a
        block is evicted, the blocks of the same released prefix that no longer serve any hit
        (their position is past the longest hit every group can still give) are moved to the
        front, so they go before blocks that still serve hits.
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
