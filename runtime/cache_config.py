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


@dataclass(frozen=True)
class CacheConfig:
    enable_caching: bool = True  # prefix caching: hash full blocks, reuse them on hits
    eviction_policy: EvictionPolicy = EvictionPolicy.GROUP_AWARE
