"""What vLLM's memory check asks of the `vllm` layout's shared pool (vllm/v1/core/kv_cache_utils.py).

`_max_memory_usage_bytes_from_groups` (0.18.0-0.32.0 read): bytes per block x the blocks one
max-length request may hold, summed over the groups (each group draws its own blocks from the one
pool); `_check_enough_kv_cache_memory` compares that with the available memory, from 0.32.0 less
the null block the pool holds back (`get_kv_cache_configs`: check_memory = available -
_pool_bytes_per_block). `_estimate_max_model_len_from_groups` binary-searches the longest length
that passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.layout import Layout

NULL_BLOCK_RESERVED_FROM = (0, 32, 0)


@dataclass(frozen=True)
class VllmKvNeed:
    layout: Layout
    reserves_null_block: bool  # vLLM >= 0.32.0 checks against available - one block

    @classmethod
    def of(cls, layout: Layout, version: tuple[int, int, int]) -> VllmKvNeed:
        return cls(layout, version >= NULL_BLOCK_RESERVED_FROM)

    @property
    def bytes_per_block(self) -> int:
        return self.layout.pools[0].bytes_per_block if self.layout.pools else 0

    def needed_bytes(self, seq_len: int) -> int:
        """bytes_per_block x sum over groups of the blocks one `seq_len`-token request may hold."""
        return self.bytes_per_block * sum(self.layout.blocks_per_request(seq_len))

    def check_bytes(self, available_bytes: int) -> int:
        """The memory vLLM checks against (it may be <= 0: "No available memory")."""
        return available_bytes - (self.bytes_per_block if self.reserves_null_block else 0)

    def available_for(self, seq_len: int) -> int:
        """The least available memory at which a `seq_len`-token request passes the check."""
        return self.needed_bytes(seq_len) + (self.bytes_per_block if self.reserves_null_block else 0)

    def num_blocks(self, available_bytes: int) -> int:
        """kv_cache_config.num_blocks from `available_bytes` (the null block included)."""
        return available_bytes // self.bytes_per_block if self.bytes_per_block else 0

    def estimated_max_len(self, check_bytes: int, max_model_len: int) -> int:
        """The longest length in [1, max_model_len] whose need fits `check_bytes`; 0 if none."""
        if self.needed_bytes(1) > check_bytes:
            return 0
        lo, hi = 1, max_model_len  # invariant: lo fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.needed_bytes(mid) <= check_bytes:
                lo = mid
            else:
                hi = mid - 1
        return lo


def vllm_gib(num_bytes: int) -> str:
    """vLLM's format_gib (vllm/utils/mem_utils.py): str(round(bytes / GiB, 2)), e.g. "16.0"."""
    return f"{round(num_bytes / 2**30, 2)}"
