"""Read-only views of a BlockPool and single-block FreeBlockQueue operations for the tests.

The pool and the queue offer bulk operations and one read-only view (`free_segments`,
`segments`); these helpers spell the one-block questions and steps the tests ask and take.
"""

from __future__ import annotations

from itertools import chain

from hkv.runtime.kv_cache.block_pool import BlockPool
from hkv.runtime.kv_cache.free_block_queue import FreeBlockQueue, FreeSegment


def free_block_ids(pool: BlockPool) -> list[int]:
    """The free and cached-free block ids in the order allocations take them."""
    return list(chain.from_iterable(pool.free_segments().values()))


def segment_of(pool: BlockPool, block_id: int) -> FreeSegment | None:
    """The free-queue segment holding the block; None if it is in use (or the null block)."""
    return next((segment for segment, blocks in pool.free_segments().items() if block_id in blocks), None)


def is_protected(pool: BlockPool, block_id: int) -> bool:
    return segment_of(pool, block_id) is FreeSegment.PROTECTED


def is_cold(pool: BlockPool, block_id: int) -> bool:
    return segment_of(pool, block_id) is FreeSegment.COLD


def is_reserved(pool: BlockPool, block_id: int) -> bool:
    return segment_of(pool, block_id) is FreeSegment.RESERVED


def is_cached_free(pool: BlockPool, block_id: int) -> bool:
    return pool.ref_cnt[block_id] == 0 and pool.block_hash[block_id] is not None


def cached_block(pool: BlockPool, block_hash: bytes, group_id: int) -> int | None:
    """The block serving hits on (block_hash, group_id), if any."""
    return pool.cached_map(group_id).get(block_hash)


# ---- one-block queue operations (checked) ------------------------------------------------------


def append(queue: FreeBlockQueue, block_id: int) -> None:
    """Queue an unqueued block at the back of the main segment."""
    assert block_id not in queue, f"block {block_id} is already free"
    queue.extend([block_id])


def appendleft(queue: FreeBlockQueue, block_id: int) -> None:
    """Queue an unqueued block at the front (reused first)."""
    assert block_id not in queue, f"block {block_id} is already free"
    queue.extendleft([block_id])


def append_to(queue: FreeBlockQueue, segment: FreeSegment, block_id: int) -> None:
    """Queue an unqueued block at the back of a segment (COLD, MAIN or PROTECTED)."""
    assert block_id not in queue, f"block {block_id} is already free"
    queue.extend_segment(segment, [block_id])


def remove(queue: FreeBlockQueue, block_id: int) -> None:
    """Unlink a queued block from anywhere in the queue."""
    assert block_id in queue, f"block {block_id} is not free"
    queue.remove_many([block_id])


def popleft(queue: FreeBlockQueue) -> int:
    """Unlink and return the first block id."""
    return queue.popleft_n(1)[0]
