"""FullAttentionManager: every token stays needed; a hit is the longest cached prefix."""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.runtime.kind_manager import IsCached, KindManager


class FullAttentionManager(KindManager):
    kind = CacheKind.FULL
    hits_downward_closed = True  # a hit of p covers [0, p), so every shorter prefix is a hit too

    def num_skipped_blocks(self, num_computed: int) -> int:
        return 0

    def next_release_len(self, num_computed: int) -> int | None:
        return None

    def longest_hit_len(self, is_cached: IsCached, max_len: int, alignment: int) -> int:
        """Scan left to right and stop at the first miss, then round down to `alignment`."""
        num_blocks = max_len // self.block_size
        pos = 0
        while pos < num_blocks and is_cached(pos):
            pos += 1
        return pos * self.block_size // alignment * alignment
