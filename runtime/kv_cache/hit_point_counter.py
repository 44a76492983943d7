"""HitPointCounter: how many admitted requests ended their prefix hit at each prefix hash.

Group-aware eviction asks it whether a request stands on a branch point: a prefix that another
request also hit up to exactly there and then diverged from (a shared system prompt), as opposed
to a conversation's previous turn, which only its next turn hits, each time further.

The history outlives the blocks (a prefix evicted and computed again keeps its count), so it is
kept by hash, bounded: past `capacity` hashes the least recently counted one is forgotten.
"""

from __future__ import annotations


class HitPointCounter:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"HitPointCounter needs capacity >= 1, got {capacity}")
        self.capacity = capacity
        self._counts: dict[bytes, int] = {}  # insertion order = least recently counted first

    def __len__(self) -> int:
        return len(self._counts)

    def count(self, prefix_hash: bytes) -> int:
        """Count one more request ending its hit at `prefix_hash`; returns the new count."""
        counts = self._counts
        num = counts.pop(prefix_hash, 0) + 1
        counts[prefix_hash] = num  # moves it to the most recent end
        if len(counts) > self.capacity:
            del counts[next(iter(counts))]
        return num

    def get(self, prefix_hash: bytes) -> int:
        return self._counts.get(prefix_hash, 0)
