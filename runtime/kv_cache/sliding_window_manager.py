"""SlidingWindowManager: token t attends to [t - W + 1, t], so only the last W - 1 tokens matter.

    computed n = 11, W = 4, block_size = 2:   skipped tokens = n - W + 1 = 8
    tokens   0 1 | 2 3 | 4 5 | 6 7 | 8 9 | 10 .
    blocks   NULL  NULL  NULL  NULL   b4    b5        blocks [0, 8 // 2) are released
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import KVCacheGroup, cdiv
from hkv.runtime.kv_cache.block_pool import BlockPool
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.kind_manager import KindManager
from hkv.runtime.kv_cache.request_blocks import RequestBlocks
from hkv.runtime.kv_cache.vllm_compat import SlidingRetention


class SlidingWindowManager(KindManager):
    kind = CacheKind.SLIDING

    def __init__(self, group: KVCacheGroup, group_id: int, pool: BlockPool, hash_block_size: int,
                 config: CacheConfig) -> None:
        super().__init__(group, group_id, pool, hash_block_size, config)
        window = group.spec.window_len  # type: ignore[union-attr]
        if window is None or window < 1:
            raise ValueError(f"sliding group {group_id} needs window_len >= 1, got {window}")
        self.window_len: int = window
        self.nonempty_windows = window > 1  # W - 1 >= 1 token before p is needed

    def num_skipped_blocks(self, num_computed: int) -> int:
        return max(0, num_computed - self.window_len + 1) // self.block_size

    def max_hit_blocks(self, max_len: int) -> int:
        return min(max_len // self.block_size, cdiv(self.window_len - 1, self.block_size))

    def next_release_len(self, num_computed: int) -> int | None:
        return (self.num_skipped_blocks(num_computed) + 1) * self.block_size + self.window_len - 1

    def cache_blocks(self, rb: RequestBlocks, num_computed: int) -> None:
        """ALL: as full attention. HIT_POINTS: only blocks inside the window before one of
        `rb.expected_hit_lens` (see SlidingRetention)."""
        if self.config.sliding_retention is SlidingRetention.ALL:
            super().cache_blocks(rb, num_computed)
            return
        gid0 = self.group_id
        start = rb.num_cached_blocks[gid0]
        stop = min(num_computed // self.block_size, len(rb.block_ids[gid0]))
        if stop <= start:
            return
        size = self.block_size
        # Windows of nearby hit points overlap (a junction and the prompt end): cache their
        # union, each position once.
        ranges = sorted((max(start, self.num_skipped_blocks(hit_len)), min(stop, hit_len // size))
                        for hit_len in rb.expected_hit_lens)
        covered = start
        for first, last in ranges:
            first = max(first, covered)
            if first < last:
                self._cache_range(rb, first, last)
                covered = last
        for gid in self.gids:
            rb.num_cached_blocks[gid] = stop

    def cache_hit_point(self, rb: RequestBlocks, hit_len: int) -> None:
        if self.config.sliding_retention is SlidingRetention.HIT_POINTS:
            gid0 = self.group_id
            first = max(rb.num_skipped_blocks[gid0], self.num_skipped_blocks(hit_len))
            last = min(len(rb.block_ids[gid0]), hit_len // self.block_size)
            if first < last:
                self._cache_range(rb, first, last)
