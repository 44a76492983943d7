"""FreeBlockQueue: the free block ids of one pool, in eviction order.

The front is evicted/reused first, the back last. Blocks are only ever inserted at the front or
appended at the back of a segment, and removed from the front or from anywhere (a hit), so the
queue is five containers:

    front (a list used as a stack: its LAST item is the queue's first)   b3 b7     <- extendleft
    cold  (an ordered dict, insertion order = queue order)               b6        <- extend_segment
    main  (an ordered dict)                                              b1 b9 b4  <- extend
    reserved (an ordered dict)                                           b5 b11    <- reserve, reserve_front
    protected (an ordered dict)                                          b2 b8     <- extend_segment

    queue order:  b7 b3 | b6 | b1 b9 b4 | b5 b11 | b2 b8

Main segment: uncached free blocks are pushed to the front (reused first, nothing is lost),
cached free blocks appended to the back of main (least recently used first). Cold segment:
cached blocks evicted before every other cached block (group-aware eviction puts there what a
running request released early and only a retry could hit). Reserved segment: the cached hits
of the requests waiting at the head of the scheduler's queue (group-aware eviction, see
`reserve`), in the order they should be evicted; they count as free for admissions like the
segments before them. Protected segment: cached blocks that should outlive everything else
(group-aware eviction puts there what running requests released early at branch points); pops
reach it only once every other segment is empty. Removing a block from the middle is O(1) in
the dicts (the pool only removes cached blocks, which are never in `front`) and O(len(front))
there.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from enum import Enum
from itertools import chain, islice


class FreeSegment(str, Enum):
    """The segments of the queue, in queue order (see the module docstring). Released blocks
    are queued at the back of COLD, MAIN or PROTECTED (`extend_segment`); FRONT and RESERVED
    have their own entry points (`extendleft`, `reserve`)."""

    FRONT = "front"  # uncached free blocks: reused first
    COLD = "cold"  # evicted before every other cached block
    MAIN = "main"  # least recently used first
    RESERVED = "reserved"  # the hits of the requests waiting at the head of the queue
    PROTECTED = "protected"  # evicted after everything else


class FreeBlockQueue:
    """Free block ids of one pool; a block id is queued at most once, in one segment."""

    def __init__(self, num_blocks: int, block_ids: Iterable[int]) -> None:
        """Queue `block_ids` (ids < num_blocks) front to back in the main segment."""
        self.num_blocks = num_blocks
        self._front: list[int] = list(block_ids)
        self._front.reverse()
        self._cold: OrderedDict[int, None] = OrderedDict()
        self._main: OrderedDict[int, None] = OrderedDict()
        self._reserved: OrderedDict[int, None] = OrderedDict()
        self._protected: OrderedDict[int, None] = OrderedDict()
        self._segments = {FreeSegment.COLD: self._cold, FreeSegment.MAIN: self._main,
                          FreeSegment.PROTECTED: self._protected}

    def __len__(self) -> int:
        return (len(self._front) + len(self._cold) + len(self._main) + len(self._reserved)
                + len(self._protected))

    @property
    def num_protected(self) -> int:
        return len(self._protected)

    @property
    def num_reserved(self) -> int:
        return len(self._reserved)

    @property
    def num_front(self) -> int:
        """Blocks inserted at the front (appendleft) still queued: popped before all others."""
        return len(self._front)

    def __contains__(self, block_id: int) -> bool:
        return (block_id in self._main or block_id in self._protected or block_id in self._cold
                or block_id in self._reserved or block_id in self._front)

    def is_protected(self, block_id: int) -> bool:
        return block_id in self._protected

    def count_protected(self, block_ids: Iterable[int]) -> int:
        protected = self._protected
        return sum(1 for block_id in block_ids if block_id in protected)

    def extend(self, block_ids: Iterable[int]) -> None:
        """`append` each block in order (not checked: check_integrity catches a block queued twice)."""
        self._extend(self._main, block_ids)

    def extend_segment(self, segment: FreeSegment, block_ids: Iterable[int]) -> None:
        """Queue each block in order at the back of `segment` (COLD, MAIN or PROTECTED; not
        checked: check_integrity catches a block queued twice)."""
        self._extend(self._segments[segment], block_ids)

    @staticmethod
    def _extend(segment: OrderedDict[int, None], block_ids: Iterable[int]) -> None:
        # A loop: OrderedDict.update inserts through the generic mapping path, 3x slower.
        for block_id in block_ids:
            segment[block_id] = None

    def extendleft(self, block_ids: Iterable[int]) -> None:
        """`appendleft` each block in order, the last one ends up first (not checked)."""
        self._front.extend(block_ids)

    def remove_many(self, block_ids: Iterable[int]) -> None:
        """`remove` each queued block (ValueError for one that is not queued)."""
        main, protected, cold, front = self._main, self._protected, self._cold, self._front
        reserved = self._reserved
        for block_id in block_ids:
            if block_id in main:
                del main[block_id]
            elif block_id in protected:
                del protected[block_id]
            elif block_id in cold:
                del cold[block_id]
            elif block_id in reserved:
                del reserved[block_id]
            else:
                front.remove(block_id)

    def move_to_front(self, block_id: int) -> None:
        """Make a queued block the next one to be reused."""
        self.move_many_to_front((block_id,))

    def move_many_to_front(self, block_ids: Iterable[int]) -> None:
        """`move_to_front` each queued block in order (the last one ends up first)."""
        for block_id in block_ids:
            self.remove_many((block_id,))
            self._front.append(block_id)

    def unprotect(self, block_ids: Iterable[int]) -> None:
        """Move each block still in the protected segment to the back of the main segment."""
        self._move_to_main(self._protected, block_ids)

    def warm(self, block_ids: Iterable[int]) -> None:
        """Move each block still in the cold segment to the back of the main segment."""
        self._move_to_main(self._cold, block_ids)

    def _move_to_main(self, segment: OrderedDict[int, None], block_ids: Iterable[int]) -> None:
        main = self._main
        for block_id in block_ids:
            if block_id in segment:
                del segment[block_id]
                main[block_id] = None

    def is_cold(self, block_id: int) -> bool:
        return block_id in self._cold

    def is_reserved(self, block_id: int) -> bool:
        return block_id in self._reserved

    def reserve(self, block_ids: Iterable[int]) -> None:
        """Make the reserved segment hold exactly the given blocks that are queued in the cold,
        main or reserved segment, in the given order (the first one is evicted first); blocks
        that are protected (they outlive a reservation), in the front part or not queued are
        skipped. Blocks it held that are not among them move, in their reserved order, to the
        back of the main segment. O(len(block_ids) + old reservation)."""
        old = self._reserved
        new: OrderedDict[int, None] = OrderedDict()
        for block_id in block_ids:
            if block_id in old:
                del old[block_id]
            elif not self._take_unprotected_cached(block_id):
                continue  # a repeat, protected, front or not queued
            new[block_id] = None
        self._extend(self._main, old)
        self._reserved = new

    def reserve_front(self, block_ids: Sequence[int]) -> None:
        """Put the given blocks that are queued in the cold or main segment at the front of the
        reserved segment, in the given order (the first one is evicted first), ahead of the
        blocks reserved before; others (already reserved, protected, front, not queued) are
        skipped. O(len(block_ids))."""
        reserved = self._reserved
        for block_id in reversed(block_ids):
            if self._take_unprotected_cached(block_id):
                reserved[block_id] = None
                reserved.move_to_end(block_id, last=False)

    def _take_unprotected_cached(self, block_id: int) -> bool:
        """Unlink the block if it is in the main or cold segment; whether it was."""
        if block_id in self._main:
            del self._main[block_id]
        elif block_id in self._cold:
            del self._cold[block_id]
        else:
            return False
        return True

    def popleft_n(self, num_blocks: int) -> list[int]:
        """Unlink and return the first `num_blocks` block ids in queue order (front, cold, main,
        reserved, protected)."""
        assert num_blocks <= len(self), f"pop of {num_blocks} from a free queue of {len(self)}"
        front = self._front
        if num_blocks <= len(front):
            if num_blocks == 0:
                return []
            block_ids = front[-num_blocks:]
            del front[-num_blocks:]
            block_ids.reverse()
            return block_ids
        block_ids = front[::-1]
        front.clear()
        remaining = num_blocks - len(block_ids)
        for segment in (self._cold, self._main, self._reserved, self._protected):
            taken = list(islice(segment, remaining))
            for block_id in taken:
                del segment[block_id]
            block_ids += taken
            remaining -= len(taken)
            if not remaining:
                break
        return block_ids

    def segments(self) -> dict[FreeSegment, list[int]]:
        """Each segment's block ids front to back, in queue order (copies; not for hot paths)."""
        return {FreeSegment.FRONT: self._front[::-1], FreeSegment.COLD: list(self._cold),
                FreeSegment.MAIN: list(self._main), FreeSegment.RESERVED: list(self._reserved),
                FreeSegment.PROTECTED: list(self._protected)}

    def __iter__(self) -> Iterator[int]:
        """Front to back: front, cold, main, reserved, protected. Not for hot paths."""
        return chain(reversed(self._front), list(self._cold), list(self._main), list(self._reserved),
                     list(self._protected))

    def check_integrity(self) -> None:
        """Every block id is in range and queued once, in one segment."""
        front, cold, main = self._front, list(self._cold), list(self._main)
        reserved, protected = list(self._reserved), list(self._protected)
        everything = front + cold + main + reserved + protected
        assert len(set(everything)) == len(everything), "free queue: a block is queued twice"
        assert all(0 <= b < self.num_blocks for b in everything), "free queue: block id out of range"
        assert len(self) == len(everything), "free queue: length"
