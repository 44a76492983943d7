"""FullAttentionManager: every token stays needed; a hit is the longest cached prefix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import takewhile

from hkv.model_specs.cache_spec import CacheKind
from hkv.runtime.kv_cache.kind_manager import KindManager


class FullAttentionManager(KindManager):
    kind = CacheKind.FULL
    hits_downward_closed = True  # a hit of p covers [0, p), so every shorter prefix is a hit too

    def num_skipped_blocks(self, num_computed: int) -> int:
        return 0

    def next_release_len(self, num_computed: int) -> int | None:
        return None

    def longest_hit_len_in(self, maps: Sequence[Mapping[bytes, int]], block_hashes: Sequence[bytes],
                           max_len: int, alignment: int) -> int:
        """The leading run of positions cached in every map (the shortest of the maps' runs)."""
        stride = self.hash_stride
        hashes = block_hashes[stride - 1:max_len // self.block_size * stride:stride]
        run = len(hashes)
        for cached in maps:
            if run:
                run = len(list(takewhile(cached.__contains__, hashes if run == len(hashes) else hashes[:run])))
        return run * self.block_size // alignment * alignment
