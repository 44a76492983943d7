"""Whether a layout's pools hold any block at all: a pool needs its reserved null block plus
one block before a single request can be given memory."""

from __future__ import annotations

from hkv.planner.errors import DoesNotFitError
from hkv.planner.layout import Layout
from hkv.planner.sizes import format_bytes

_MIN_BLOCKS = 2  # the null block + one usable block


def check_pools_hold_a_block(layout: Layout, available_bytes: int) -> None:
    """DoesNotFitError naming the budget and the bytes one block needs, when a pool of `layout`
    has no usable block (num_blocks counts the null block)."""
    for pool in layout.pools:
        if pool.num_blocks < _MIN_BLOCKS:
            raise DoesNotFitError(
                f"the KV budget of {format_bytes(available_bytes)} holds no block of the {layout.name} "
                f"layout: one block of pool {pool.pool_id} needs {pool.bytes_per_block:,} bytes, and "
                f"each pool keeps one more as its null block")
