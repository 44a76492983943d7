"""FreeBlockQueue: an intrusive doubly linked list of free block ids, in eviction order.

The front is evicted/reused first, the back last. Links live in two preallocated int lists
indexed by block id (plus a head and a tail node past the last block id), so every operation is
O(1) and allocates no Python objects:

    head <-> b3 <-> b7 <-> b1 <-> tail        next[head] = 3, prev[3] = head, next[3] = 7, ...

Uncached free blocks are pushed to the front (reused first, nothing is lost); cached free blocks
are appended to the back (least recently used first).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class FreeBlockQueue:
    """Free block ids of one pool; a block id is either queued or not (no duplicates)."""

    def __init__(self, num_blocks: int, block_ids: Iterable[int]) -> None:
        """Queue `block_ids` (ids < num_blocks) front to back."""
        self._head = num_blocks
        self._tail = num_blocks + 1
        self._next = [0] * (num_blocks + 2)
        self._prev = [0] * (num_blocks + 2)
        self._queued = bytearray(num_blocks)
        self._len = 0
        self._next[self._head] = self._tail
        self._prev[self._tail] = self._head
        if isinstance(block_ids, range) and block_ids.step == 1 and len(block_ids) > 0:
            self._link_run(block_ids.start, block_ids.stop)
        else:
            for block_id in block_ids:
                self.append(block_id)

    def _link_run(self, first: int, stop: int) -> None:
        """Link the empty queue to first, first + 1, ..., stop - 1 in one pass of list slices."""
        last = stop - 1
        self._next[first:last] = range(first + 1, stop)
        self._next[last] = self._tail
        self._next[self._head] = first
        self._prev[first + 1:stop] = range(first, last)
        self._prev[first] = self._head
        self._prev[self._tail] = last
        self._queued[first:stop] = b"\x01" * (stop - first)
        self._len = stop - first

    def __len__(self) -> int:
        return self._len

    def __contains__(self, block_id: int) -> bool:
        return bool(self._queued[block_id])

    def append(self, block_id: int) -> None:
        """Queue `block_id` at the back (evicted last). It must not be queued."""
        assert not self._queued[block_id], f"block {block_id} is already free"
        last = self._prev[self._tail]
        self._next[last] = block_id
        self._prev[block_id] = last
        self._next[block_id] = self._tail
        self._prev[self._tail] = block_id
        self._queued[block_id] = 1
        self._len += 1

    def appendleft(self, block_id: int) -> None:
        """Queue `block_id` at the front (reused first). It must not be queued."""
        assert not self._queued[block_id], f"block {block_id} is already free"
        first = self._next[self._head]
        self._prev[first] = block_id
        self._next[block_id] = first
        self._prev[block_id] = self._head
        self._next[self._head] = block_id
        self._queued[block_id] = 1
        self._len += 1

    def remove(self, block_id: int) -> None:
        """Unlink a queued block from anywhere in the queue."""
        assert self._queued[block_id], f"block {block_id} is not free"
        prev = self._prev[block_id]
        nxt = self._next[block_id]
        self._next[prev] = nxt
        self._prev[nxt] = prev
        self._queued[block_id] = 0
        self._len -= 1

    def move_to_front(self, block_id: int) -> None:
        """Make a queued block the next one to be reused."""
        self.remove(block_id)
        self.appendleft(block_id)

    def move_many_to_front(self, block_ids: Iterable[int]) -> None:
        """`move_to_front` each queued block in order (the last one ends up first)."""
        nxt, prv, queued, head = self._next, self._prev, self._queued, self._head
        for block_id in block_ids:
            assert queued[block_id], f"block {block_id} is not free"
            prev = prv[block_id]
            after = nxt[block_id]
            nxt[prev] = after
            prv[after] = prev
            first = nxt[head]
            prv[first] = block_id
            nxt[block_id] = first
            prv[block_id] = head
            nxt[head] = block_id

    def popleft(self) -> int:
        """Unlink and return the front block id. The queue must not be empty."""
        block_id = self._next[self._head]
        assert block_id != self._tail, "pop from an empty free queue"
        nxt = self._next[block_id]
        self._next[self._head] = nxt
        self._prev[nxt] = self._head
        self._queued[block_id] = 0
        self._len -= 1
        return block_id

    def popleft_n(self, num_blocks: int) -> list[int]:
        """Unlink and return the first `num_blocks` block ids (front first)."""
        assert num_blocks <= self._len, f"pop of {num_blocks} from a free queue of {self._len}"
        nxt, queued, tail = self._next, self._queued, self._tail
        block_ids = []
        block_id = nxt[self._head]
        for _ in range(num_blocks):
            block_ids.append(block_id)
            queued[block_id] = 0
            block_id = nxt[block_id]
        assert block_id == tail or num_blocks < self._len
        nxt[self._head] = block_id
        self._prev[block_id] = self._head
        self._len -= num_blocks
        return block_ids

    def __iter__(self) -> Iterator[int]:
        """Front to back. Not for hot paths."""
        block_id = self._next[self._head]
        while block_id != self._tail:
            yield block_id
            block_id = self._next[block_id]

    def check_integrity(self) -> None:
        """Both link directions agree with each other, with the length and with the queued flags."""
        forward = []
        block_id = self._next[self._head]
        while block_id != self._tail:
            forward.append(block_id)
            assert len(forward) <= self._len, "free queue: forward walk longer than the length"
            block_id = self._next[block_id]
        backward = []
        block_id = self._prev[self._tail]
        while block_id != self._head:
            backward.append(block_id)
            assert len(backward) <= self._len, "free queue: backward walk longer than the length"
            block_id = self._prev[block_id]
        assert forward == backward[::-1], "free queue: forward and backward walks differ"
        assert len(forward) == self._len, f"free queue: length {self._len} != {len(forward)} linked"
        assert len(set(forward)) == len(forward), "free queue: a block is linked twice"
        queued = {i for i, flag in enumerate(self._queued) if flag}
        assert queued == set(forward), "free queue: queued flags differ from the linked blocks"
