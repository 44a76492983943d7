"""RecurrentStateManager: one live state block per request, checkpoints at block boundaries.

Block position i of a recurrent group stands for the boundary (i + 1) * block_size. The live
state of a request that computed n tokens sits at position cdiv(n, block_size) - 1 (the table's
last entry); every other position is null unless it holds a checkpoint:

    block_size = 4, a step computes tokens [5, 10):    before   [NULL, s1]
                                                        after    [NULL, NULL, s2]   copy s1 -> s2

When a step ends exactly on a boundary (n % block_size == 0) the live block holds the state at
n; the next allocation moves the live state to a new block (the kernel copies, see
`RequestBlocks.state_copies`) and the old block is cached under the hash at n: a checkpoint. A
hit of p tokens needs only the checkpoint at p. A request holds at most `num_state_blocks` blocks: with
one, the previous state is released before the next is allocated (it stays cached if it is a
checkpoint, else it is usually popped straight back, i.e. updated in place). With a checkpoint
grid (`checkpoint_interval`, set by the scheduler for one-live-state groups) only states on the
grid or at the request's hit points are cached.
"""

from __future__ import annotations

from collections.abc import Sequence

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import KVCacheGroup, cdiv
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.kind_manager import KindManager
from hkv.runtime.kv_cache.request_blocks import RequestBlocks


class RecurrentStateManager(KindManager):
    kind = CacheKind.RECURRENT

    def __init__(self, group: KVCacheGroup, group_id: int, pool: BlockPool, hash_block_size: int,
                 config: CacheConfig) -> None:
        super().__init__(group, group_id, pool, hash_block_size, config)
        if group.num_state_blocks is None or group.num_state_blocks < 1:
            raise ValueError(f"recurrent group {group_id} needs num_state_blocks >= 1, "
                             f"got {group.num_state_blocks}")
        self.num_state_blocks = group.num_state_blocks
        self.nonempty_windows = True  # a hit needs the checkpoint block just before it
        # 0: a checkpoint wherever a step stops on a boundary (vLLM's align mode). Else (see
        # KVCacheManager.use_checkpoint_grid) only on multiples of this many tokens and at the
        # request's hit points, so checkpoints do not churn through a small state pool.
        self.checkpoint_interval = 0

    def num_skipped_blocks(self, num_computed: int) -> int:
        return max(0, cdiv(num_computed, self.block_size) - 1)

    def max_hit_blocks(self, max_len: int) -> int:
        return min(1, max_len // self.block_size)  # the checkpoint at the hit

    def next_release_len(self, num_computed: int) -> int | None:
        return (self.num_skipped_blocks(num_computed) + 1) * self.block_size + 1

    def _held_positions(self, rb: RequestBlocks) -> list[int]:
        blocks = rb.block_ids[self.group_id]
        start = rb.num_skipped_blocks[self.group_id]
        return [pos for pos in range(start, len(blocks)) if blocks[pos] != NULL_BLOCK_ID]

    def num_blocks_to_allocate(self, rb: RequestBlocks, hit_blocks: Sequence[int], num_tokens: int,
                               num_main_tokens: int) -> int:
        blocks = rb.block_ids[self.group_id]
        if cdiv(num_main_tokens, self.block_size) <= len(blocks) + len(hit_blocks):
            return 0  # the live state stays in the table's last block
        if hit_blocks:  # admission: the only held block is the hit's checkpoint (ref taken first)
            held = [(b, self.pool.ref_cnt[b] + 1) for b in hit_blocks if b != NULL_BLOCK_ID]
        else:
            held = [(blocks[pos], self.pool.ref_cnt[blocks[pos]]) for pos in self._held_positions(rb)]
        num_released = max(0, len(held) - self.num_state_blocks + 1)
        num_returned = sum(ref == 1 for _, ref in held[:num_released])
        return 1 - num_returned

    def max_blocks_to_pop(self, rb: RequestBlocks, num_tokens: int) -> int:
        """One new live state when the allocation reaches a new position, else none."""
        return int(cdiv(num_tokens, self.block_size) > len(rb.block_ids[self.group_id]))

    def allocate_new_blocks(self, rb: RequestBlocks, num_tokens: int,
                            num_main_tokens: int) -> list[list[int]]:
        """(Recurrent groups are batches of one.)"""
        gid = self.group_id
        blocks = rb.block_ids[gid]
        live_pos = cdiv(num_main_tokens, self.block_size) - 1
        if live_pos < len(blocks):
            return [[]]
        held = self._held_positions(rb)
        if self.num_state_blocks == 1 and len(held) == 1 and self._moves_in_place(blocks[held[0]]):
            # Released uncached, the live block would be the next one popped: it stays, only
            # its position moves (the same pool states as release then allocate, one step).
            block = blocks[held[0]]
            blocks[held[0]] = NULL_BLOCK_ID
            self.num_early_released_blocks += 1
            blocks.extend([NULL_BLOCK_ID] * (live_pos - len(blocks)))
            blocks.append(block)
            return [[block]]
        source = blocks[held[-1]] if held else None
        while len(held) >= self.num_state_blocks:
            pos = held.pop(0)
            self.eviction.release_early(rb, self.pool, gid, [blocks[pos]])
            blocks[pos] = NULL_BLOCK_ID
            self.num_early_released_blocks += 1
        blocks.extend([NULL_BLOCK_ID] * (live_pos - len(blocks)))
        new_block = self.pool.allocate(1, gid)[0]
        blocks.append(new_block)
        if source is not None and source != new_block:
            rb.state_copies.append((gid, source, new_block))
        return [[new_block]]

    def _moves_in_place(self, block: int) -> bool:
        """Whether releasing `block` (this request's only reference, no hash) and popping one
        block gives `block` back: it then goes to the front of the free queue (a LanePool: its
        id is the next spare), whatever the eviction policy."""
        pool = self.pool
        return pool.ref_cnt[block] == 1 and pool.block_hash[block] is None

    def cache_blocks(self, rb: RequestBlocks, num_computed: int) -> None:
        """Cache the live block as a checkpoint when the request stopped exactly on a boundary."""
        if num_computed == 0 or num_computed % self.block_size:
            return
        interval = self.checkpoint_interval
        if interval and num_computed % interval and not self._is_hit_point(rb, num_computed):
            return
        pos = num_computed // self.block_size - 1
        blocks = rb.block_ids[self.group_id]
        if pos < len(blocks) and blocks[pos] != NULL_BLOCK_ID:
            self.pool.cache_block(blocks[pos], rb.request.block_hashes[(pos + 1) * self.hash_stride - 1],
                                  self.group_id)

    def _is_hit_point(self, rb: RequestBlocks, num_computed: int) -> bool:
        """Where a later request is expected to hit: the full-attention junction, the prompt's
        last boundary (a next turn), the request's expected hit lengths (the same prompt again)."""
        prompt_end = rb.request.num_prompt_tokens // self.block_size * self.block_size
        return num_computed in (rb.closed_hit_len, prompt_end) or num_computed in rb.expected_hit_lens
