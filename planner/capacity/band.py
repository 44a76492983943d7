"""The capacity a layout would have at each end of the KV budget's band.

When the budget is estimated (not given), vLLM's real budget lies in MemoryBudget.available_band;
the layout is rebuilt at both ends so that KV tokens, concurrency and sustained N can be stated as
ranges. A budget the user gave is exact: no band.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CapacityBand:
    """What a layout holds at the low and the high end of the budget band (low <= high)."""

    available_low_bytes: int
    available_high_bytes: int
    kv_cache_tokens: tuple[int, int]
    logged_concurrency: tuple[float, float]
    sustained_concurrency: tuple[int, int] | None  # None: not searched (only the primary layout is)
    max_context_len: tuple[int, int]

    def __post_init__(self) -> None:
        assert self.available_low_bytes <= self.available_high_bytes
