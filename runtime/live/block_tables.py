"""BlockTables: the model runner's copy of every running request's block tables.

It applies each SchedulerOutput (whole tables for new requests, appended entries for the others)
and turns positions into KV slots. Per-token work happens only here, on the runner's side.
"""

from __future__ import annotations

from hkv.runtime.scheduler.scheduler_output import SchedulerOutput


class BlockTables:
    def __init__(self, block_sizes: tuple[int, ...]) -> None:
        self.block_sizes = block_sizes  # per group, tokens per block
        self._tables: dict[str, list[list[int]]] = {}

    def apply(self, output: SchedulerOutput) -> None:
        for request_id in output.finished_request_ids + output.preempted_request_ids:
            self._tables.pop(request_id, None)
        for entry in output.scheduled:
            if entry.is_new:
                self._tables[entry.request_id] = [list(ids) for ids in entry.block_ids]
            else:
                for table, ids in zip(self._tables[entry.request_id], entry.block_ids, strict=True):
                    table.extend(ids)

    def table(self, request_id: str, group_id: int) -> list[int]:
        return self._tables[request_id][group_id]

    def slot_mapping(self, request_id: str, group_id: int, positions: range) -> list[int]:
        """slot = block_id * block_size + offset for each position (attention groups)."""
        size, table = self.block_sizes[group_id], self._tables[request_id][group_id]
        return [table[p // size] * size + p % size for p in positions]
