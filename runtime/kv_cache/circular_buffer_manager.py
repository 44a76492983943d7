"""CircularBufferManager: one ring block per request for its whole life, never prefix cached.

vLLM 0.33's CircularBufferManager (v1/core/single_type_kv_cache_manager.py l.1186-1271) claims a
single block the first time a request allocates and keeps it until the request ends: the ring
(Step5's CSA tail ring) is addressed by token position modulo its capacity, so it never grows,
never releases early and never takes part in a prefix hit (the coordinator skips groups that are
not prefix_cacheable; a hit restores the other groups and the ring starts empty, the hit ending on a
region boundary). Its table here keeps the positional shape of the others so that the
coordinator's steady bounds and hit bookkeeping apply unchanged:

    fresh request, 40 tokens, block_size 16:  [ring, NULL, NULL]
    after a 32-token hit, 40 tokens:          [NULL, NULL, ring]   (the hit's positions are null)

i.e. the ring sits at the first position past the skipped frontier (the hit's blocks), every other
position is the null block, and the table covers cdiv(tokens, block_size) positions like any
attention table (at least one past the frontier).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import cdiv
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID
from hkv.runtime.kv_cache.kind_manager import KindManager
from hkv.runtime.kv_cache.request_blocks import RequestBlocks


class CircularBufferManager(KindManager):
    kind = CacheKind.CIRCULAR
    hits_downward_closed = True  # it accepts every hit length, so every shorter one too

    def num_skipped_blocks(self, num_computed: int) -> int:
        return 0  # nothing is ever released early (the skipped frontier only marks a hit's positions)

    def next_release_len(self, num_computed: int) -> int | None:
        return None

    # ---- prefix-cache lookup: not prefix cached, so never limits a hit -------------------------

    def longest_hit_len_in(self, maps: Sequence[Mapping[bytes, int]], block_hashes: Sequence[bytes],
                           max_len: int, alignment: int) -> int:
        return max_len // alignment * alignment

    def max_hit_blocks(self, max_len: int) -> int:
        return 0

    def hit_first_block(self, hit_len: int) -> int:
        """Every position of a hit is the null block: the ring is claimed fresh after it."""
        return hit_len // self.block_size

    # ---- request lifecycle ---------------------------------------------------------------------

    def _has_ring(self, rb: RequestBlocks) -> bool:
        return len(rb.block_ids[self.group_id]) > rb.num_skipped_blocks[self.group_id]

    def num_blocks_to_allocate(self, rb: RequestBlocks, hit_blocks: Sequence[int], num_tokens: int,
                               num_main_tokens: int) -> int:
        return 0 if self._has_ring(rb) else 1

    def max_blocks_to_pop(self, rb: RequestBlocks, num_tokens: int) -> int:
        return 0 if self._has_ring(rb) else 1

    def allocate_new_blocks(self, rb: RequestBlocks, num_tokens: int,
                            num_main_tokens: int) -> list[list[int]]:
        """Claim the ring on the first allocation (one block per group of the batch), then only
        extend the tables with null positions so they cover `num_tokens`."""
        tables = rb.block_ids
        new_blocks: list[list[int]] = (
            [[] for _ in self.gids] if self._has_ring(rb) else self.pool.allocate_groups(1, self.gids))
        num_positions = cdiv(num_tokens, self.block_size)
        for gid, blocks in zip(self.gids, new_blocks, strict=True):
            table = tables[gid]
            table.extend(blocks)
            if len(table) < num_positions:
                table.extend([NULL_BLOCK_ID] * (num_positions - len(table)))
        return new_blocks

    def remove_skipped_blocks(self, rb: RequestBlocks, num_computed: int) -> None:
        return

    def cache_blocks(self, rb: RequestBlocks, num_computed: int) -> None:
        return  # rings are per-request scratch (vLLM: prefix_cacheable False)

    def check_request(self, rb: RequestBlocks) -> None:
        """A request holds exactly one ring block in each group of the batch, right past its
        skipped frontier, and null everywhere else. Raises AssertionError."""
        for gid in self.gids:
            table, frontier = rb.block_ids[gid], rb.num_skipped_blocks[gid]
            held = [pos for pos, block in enumerate(table) if block != NULL_BLOCK_ID]
            assert held in ([], [frontier]), (
                f"request {rb.request.request_id}: circular group {gid} holds blocks at {held}, frontier {frontier}")
            assert held or len(table) == frontier, (
                f"request {rb.request.request_id}: circular group {gid} has positions past its frontier but no ring")
