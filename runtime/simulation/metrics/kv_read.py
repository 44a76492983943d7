"""KvReadModel: the KV bytes one step reads, per rank, from the layout (for StepCost).

    full attention groups   every scheduled request reads its whole context: layers x bytes per
                            token x the running requests' computed tokens plus the step's new
                            ones (a prefix block shared by several requests is read by each)
    sliding / chunked       what the group holds: its blocks in use x block bytes of its layers
                            (out-of-window blocks are released, so that is about the windows)
    recurrent               each scheduled request reads and writes its state once per layer:
                            2 x state bytes x layers (checkpoint copies a layout keeps are not read)

Attention bytes come from the group's page (page_size_bytes per layer per block_size tokens),
states from the state spec: a recurrent page padded to an attention page's size is not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import Layout


@dataclass(frozen=True)
class KvReadModel:
    full_bytes_per_token: float  # all full-attention layers of the rank
    window_groups: tuple[tuple[int, int, int], ...]  # (pool index, group id, block bytes of its layers)
    state_bytes_per_request: int  # read + write of every recurrent layer's state

    @classmethod
    def from_layout(cls, layout: Layout, pool_ids: Sequence[int]) -> KvReadModel:
        """`pool_ids`: the pools in the order the caller indexes their in-use counts."""
        index_of = {pool_id: i for i, pool_id in enumerate(pool_ids)}
        full = 0.0
        window: list[tuple[int, int, int]] = []
        states = 0
        for gid, group in enumerate(layout.groups):
            block_bytes = group.page_size_bytes * group.num_layers
            if group.kind is CacheKind.FULL:
                full += block_bytes / group.block_size
            elif group.kind is CacheKind.RECURRENT:
                states += 2 * group.ideal_bytes(0)  # num_layers x state bytes
            else:
                window.append((index_of[group.pool_id], gid, block_bytes))
        return cls(full, tuple(window), states)

    def read_bytes(self, context_tokens: int, in_use_by_pool: Sequence[Sequence[int]], num_scheduled: int) -> float:
        """`context_tokens`: tokens the scheduled requests attend to (computed + this step's);
        `in_use_by_pool[p][g]`: blocks of group g in use in pool p."""
        total = self.full_bytes_per_token * context_tokens + self.state_bytes_per_request * num_scheduled
        for pool_index, gid, block_bytes in self.window_groups:
            total += in_use_by_pool[pool_index][gid] * block_bytes
        return total
