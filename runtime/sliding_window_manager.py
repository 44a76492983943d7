"""SlidingWindowManager: token t attends to [t - W + 1, t], so only the last W - 1 tokens matter.

    computed n = 11, W = 4, block_size = 2:   skipped tokens = n - W + 1 = 8
    tokens   0 1 | 2 3 | 4 5 | 6 7 | 8 9 | 10 .
    blocks   NULL  NULL  NULL  NULL   b4    b5        blocks [0, 8 // 2) are released
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.runtime.kind_manager import KindManager


class SlidingWindowManager(KindManager):
    kind = CacheKind.SLIDING

    @property
    def window_len(self) -> int:
        window = self.group.spec.window_len  # type: ignore[union-attr]
        assert window is not None
        return window

    def num_skipped_blocks(self, num_computed: int) -> int:
        return max(0, num_computed - self.window_len + 1) // self.block_size

    def next_release_len(self, num_computed: int) -> int | None:
        return (self.num_skipped_blocks(num_computed) + 1) * self.block_size + self.window_len - 1
