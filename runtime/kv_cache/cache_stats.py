"""CacheStats: a frozen snapshot of the KV cache manager's counters."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CacheStats:
    num_query_tokens: int  # prompt tokens of admitted requests (re-admissions included)
    num_hit_tokens: int  # of those, tokens served from the prefix cache
    num_early_released_blocks: tuple[int, ...]  # per group: released by windows/chunks/states
    num_blocks_in_use: tuple[int, ...]  # per group: distinct blocks with ref_cnt > 0
    num_free_blocks: tuple[int, ...]  # per pool (layout order): free + cached-free
    num_evictions: int  # cached blocks whose hash was dropped to reuse them
    num_protected_blocks: tuple[int, ...]  # per pool: cached-free, released early by running requests
    usage: float  # share of usable blocks in use

    @property
    def hit_rate(self) -> float:
        return self.num_hit_tokens / self.num_query_tokens if self.num_query_tokens else 0.0
