"""FreeBlockQueue: an intrusive doubly linked list of free block ids, in eviction order.

The front is evicted/reused first, the back last. Links live in two preallocated int lists
indexed by block id (plus head, mark and tail nodes past the last block id), so every operation
is O(1) and allocates no Python objects:

    head <-> b3 <-> b7 <-> b1 <-> mark <-> b9 <-> tail       next[head] = 3, prev[3] = head, ...
             |---- main segment ----|         |protected|

Main segment: uncached free blocks are pushed to its front (reused first, nothing is lost),
cached free blocks appended to its back (least recently used first). Protected segment: cached
blocks that should outlive the main segment (group-aware eviction puts there what running
requests released early); pops reach it only once the main segment is empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

MAIN = 1
PROTECTED = 2


class FreeBlockQueue:
    """Free block ids of one pool; a block id is queued at most once, in one segment."""

    def __init__(self, num_blocks: int, block_ids: Iterable[int]) -> None:
        """Queue `block_ids` (ids < num_blocks) front to back in the main segment."""
        self._head = num_blocks
        self._mark = num_blocks + 1
        self._tail = num_blocks + 2
        self._next = [0] * (num_blocks + 3)
        self._prev = [0] * (num_blocks + 3)
        self._segment = bytearray(num_blocks)  # 0: not queued, MAIN or PROTECTED
        self._len = 0
        self.num_protected = 0
        self._link(self._head, self._mark)
        self._link(self._mark, self._tail)
        if isinstance(block_ids, range) and block_ids.step == 1 and len(block_ids) > 0:
            self._link_run(block_ids.start, block_ids.stop)
        else:
            self.extend(block_ids)

    def _link(self, left: int, right: int) -> None:
        self._next[left] = right
        self._prev[right] = left

    def _link_run(self, first: int, stop: int) -> None:
        """Link the empty queue to first, first + 1, ..., stop - 1 in one pass of list slices."""
        last = stop - 1
        self._next[first:last] = range(first + 1, stop)
        self._prev[first + 1:stop] = range(first, last)
        self._link(self._head, first)
        self._link(last, self._mark)
        self._segment[first:stop] = bytes([MAIN]) * (stop - first)
        self._len = stop - first

    def __len__(self) -> int:
        return self._len

    def __contains__(self, block_id: int) -> bool:
        return bool(self._segment[block_id])

    def is_protected(self, block_id: int) -> bool:
        return self._segment[block_id] == PROTECTED

    def count_protected(self, block_ids: Iterable[int]) -> int:
        return bytes(map(self._segment.__getitem__, block_ids)).count(PROTECTED)

    def append(self, block_id: int) -> None:
        """Queue `block_id` at the back of the main segment. It must not be queued."""
        self.extend((block_id,))

    def extend(self, block_ids: Iterable[int]) -> None:
        """`append` each block in order."""
        nxt, prv, segment, mark = self._next, self._prev, self._segment, self._mark
        count = 0
        for block_id in block_ids:
            assert not segment[block_id], f"block {block_id} is already free"
            last = prv[mark]
            nxt[last] = block_id
            prv[block_id] = last
            nxt[block_id] = mark
            prv[mark] = block_id
            segment[block_id] = MAIN
            count += 1
        self._len += count

    def append_protected(self, block_id: int) -> None:
        """Queue `block_id` at the back of the protected segment (evicted last)."""
        assert not self._segment[block_id], f"block {block_id} is already free"
        tail = self._tail
        last = self._prev[tail]
        self._link(last, block_id)
        self._link(block_id, tail)
        self._segment[block_id] = PROTECTED
        self._len += 1
        self.num_protected += 1

    def appendleft(self, block_id: int) -> None:
        """Queue `block_id` at the front (reused first). It must not be queued."""
        self.extendleft((block_id,))

    def extendleft(self, block_ids: Iterable[int]) -> None:
        """`appendleft` each block in order (the last one ends up first)."""
        nxt, prv, segment, head = self._next, self._prev, self._segment, self._head
        count = 0
        for block_id in block_ids:
            assert not segment[block_id], f"block {block_id} is already free"
            first = nxt[head]
            prv[first] = block_id
            nxt[block_id] = first
            prv[block_id] = head
            nxt[head] = block_id
            segment[block_id] = MAIN
            count += 1
        self._len += count

    def remove(self, block_id: int) -> None:
        """Unlink a queued block from anywhere in the queue."""
        assert self._segment[block_id], f"block {block_id} is not free"
        self._link(self._prev[block_id], self._next[block_id])
        if self._segment[block_id] == PROTECTED:
            self.num_protected -= 1
        self._segment[block_id] = 0
        self._len -= 1

    def move_to_front(self, block_id: int) -> None:
        """Make a queued block the next one to be reused."""
        self.move_many_to_front((block_id,))

    def move_many_to_front(self, block_ids: Iterable[int]) -> None:
        """`move_to_front` each queued block in order (the last one ends up first)."""
        nxt, prv, segment, head = self._next, self._prev, self._segment, self._head
        for block_id in block_ids:
            assert segment[block_id], f"block {block_id} is not free"
            if segment[block_id] == PROTECTED:
                self.num_protected -= 1
            prev = prv[block_id]
            after = nxt[block_id]
            nxt[prev] = after
            prv[after] = prev
            first = nxt[head]
            prv[first] = block_id
            nxt[block_id] = first
            prv[block_id] = head
            nxt[head] = block_id
            segment[block_id] = MAIN

    def unprotect(self, block_ids: Iterable[int]) -> None:
        """Move each block still in the protected segment to the back of the main segment."""
        for block_id in block_ids:
            if self._segment[block_id] == PROTECTED:
                self.remove(block_id)
                self.append(block_id)

    def popleft(self) -> int:
        """Unlink and return the front block id. The queue must not be empty."""
        return self.popleft_n(1)[0]

    def popleft_n(self, num_blocks: int) -> list[int]:
        """Unlink and return the first `num_blocks` block ids (main segment first)."""
        assert num_blocks <= self._len, f"pop of {num_blocks} from a free queue of {self._len}"
        nxt, segment, mark = self._next, self._segment, self._mark
        block_ids: list[int] = []
        remaining = num_blocks
        block_id = nxt[self._head]
        while remaining and block_id != mark:
            block_ids.append(block_id)
            segment[block_id] = 0
            block_id = nxt[block_id]
            remaining -= 1
        self._link(self._head, block_id)
        if remaining:  # the main segment ran out: continue in the protected one
            block_id = nxt[mark]
            for _ in range(remaining):
                block_ids.append(block_id)
                segment[block_id] = 0
                block_id = nxt[block_id]
            self._link(mark, block_id)
            self.num_protected -= remaining
        self._len -= num_blocks
        return block_ids

    def __iter__(self) -> Iterator[int]:
        """Front to back, main segment then protected. Not for hot paths."""
        block_id = self._next[self._head]
        while block_id != self._tail:
            if block_id != self._mark:
                yield block_id
            block_id = self._next[block_id]

    def check_integrity(self) -> None:
        """Both link directions agree with each other, with the length and with the segment
        flags (main blocks before the mark, protected ones after it)."""
        forward: list[int] = []
        block_id = self._next[self._head]
        while block_id != self._tail:
            forward.append(block_id)
            assert len(forward) <= self._len + 1, "free queue: forward walk longer than the length"
            block_id = self._next[block_id]
        backward: list[int] = []
        block_id = self._prev[self._tail]
        while block_id != self._head:
            backward.append(block_id)
            assert len(backward) <= self._len + 1, "free queue: backward walk longer than the length"
            block_id = self._prev[block_id]
        assert forward == backward[::-1], "free queue: forward and backward walks differ"
        assert forward.count(self._mark) == 1, "free queue: segment mark lost"
        split = forward.index(self._mark)
        main, protected = forward[:split], forward[split + 1:]
        assert len(main) + len(protected) == self._len, f"free queue: length {self._len} != linked"
        assert len(set(forward)) == len(forward), "free queue: a block is linked twice"
        assert all(self._segment[b] == MAIN for b in main), "free queue: main segment flags"
        assert all(self._segment[b] == PROTECTED for b in protected), "free queue: protected flags"
        assert len(protected) == self.num_protected, "free queue: protected count"
        queued = {i for i, flag in enumerate(self._segment) if flag}
        assert queued == set(forward) - {self._mark}, "free queue: flags differ from the linked blocks"
