"""ChunkedLocalManager: token t attends only within its chunk [floor(t / C) * C, t].

    computed n = 9, C = 4, block_size = 2:   skipped tokens = floor(9 / 4) * 4 = 8
    tokens   0 1 | 2 3 | 4 5 | 6 7 | 8 .
    blocks   NULL  NULL  NULL  NULL   b4

A hit at a chunk boundary needs no block at all; inside a chunk it needs the chunk's blocks.
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import KVCacheGroup
from hkv.runtime.kv_cache.block_pool import BlockPool
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.kind_manager import KindManager


class ChunkedLocalManager(KindManager):
    kind = CacheKind.CHUNKED

    def __init__(self, group: KVCacheGroup, group_id: int, pool: BlockPool, hash_block_size: int,
                 config: CacheConfig) -> None:
        super().__init__(group, group_id, pool, hash_block_size, config)
        chunk = group.spec.chunk_len  # type: ignore[union-attr]
        if chunk is None or chunk < 1:
            raise ValueError(f"chunked group {group_id} needs chunk_len >= 1, got {chunk}")
        self.chunk_len: int = chunk

    def num_skipped_blocks(self, num_computed: int) -> int:
        return num_computed // self.chunk_len * self.chunk_len // self.block_size

    def next_release_len(self, num_computed: int) -> int | None:
        return (num_computed // self.chunk_len + 1) * self.chunk_len
