"""TensorBlockTables: the model runner's copy of every running request's block tables, as tensors.

The tensor twin of `block_tables.BlockTables` (pure Python, which the torch-free simulation
tests use); same `apply` / `table` / `slot_mapping` contract.

Per KV cache group one int32 tensor [rows, width] kept between steps: a row per running request
(rows are reused once a request finishes or is preempted), entries past a request's table 0
(the null block, never read). Applying a SchedulerOutput writes only what changed: a new
request's whole table, or the entries a continuing one appended (a decode appends one every
block_size tokens). A step's tables are then its requests' rows, selected with one
index_select per group, and its slot mappings one gather, with no Python int per token.

The tables live on the CPU; the runner moves a step's selection to its device once per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from hkv.runtime.scheduler.scheduler_output import SchedulerOutput

_INITIAL_ROWS = 16
_INITIAL_WIDTH = 16


class StepRows(NamedTuple):
    """A step's requests as table rows: which row, how many entries each group holds."""

    rows: torch.Tensor  # [num_seqs] int64
    widths: tuple[int, ...]  # per group, the longest table among the step's requests


class TensorBlockTables:
    def __init__(self, block_sizes: tuple[int, ...]) -> None:
        self.block_sizes = block_sizes  # per group, tokens per block
        self._row_of: dict[str, int] = {}
        self._lens: dict[str, list[int]] = {}  # per request, per group: entries held
        self._free_rows: list[int] = []
        self._num_rows = 0
        self._tables = [torch.zeros(_INITIAL_ROWS, _INITIAL_WIDTH, dtype=torch.int32) for _ in block_sizes]

    def apply(self, output: SchedulerOutput) -> None:
        """Forget finished and preempted requests, then write the step's new and appended entries."""
        for request_id in output.finished_request_ids + output.preempted_request_ids:
            self._release(request_id)
        for entry in output.scheduled:
            if entry.is_new:
                self._release(entry.request_id)  # re-admitted: its old table is stale
                self._row_of[entry.request_id] = self._take_row()
                self._lens[entry.request_id] = [0] * len(self.block_sizes)
            row, lens = self._row_of[entry.request_id], self._lens[entry.request_id]
            for group_id, ids in enumerate(entry.block_ids):
                if ids:
                    self._write(row, group_id, lens[group_id], ids)
                    lens[group_id] += len(ids)

    def table(self, request_id: str, group_id: int) -> list[int]:
        """The request's whole table for the group (KeyError for an unknown request)."""
        row = self._row_of[request_id]
        return self._tables[group_id][row, :self._lens[request_id][group_id]].tolist()

    def slot_mapping(self, request_id: str, group_id: int, positions: range) -> list[int]:
        """slot = block_id * block_size + offset for each position (attention groups)."""
        size, table = self.block_sizes[group_id], self.table(request_id, group_id)
        return [table[p // size] * size + p % size for p in positions]

    def step_rows(self, request_ids: Sequence[str]) -> StepRows:
        rows = [self._row_of[r] for r in request_ids]
        widths = tuple(max(self._lens[r][g] for r in request_ids) for g in range(len(self.block_sizes)))
        return StepRows(torch.tensor(rows, dtype=torch.int64), widths)

    def step_table(self, step: StepRows, group_id: int) -> torch.Tensor:
        """[num_seqs, width] int32: the step's rows of the group's table (a copy)."""
        return self._tables[group_id][:, :max(1, step.widths[group_id])].index_select(0, step.rows)

    def last_entries(self, step: StepRows, request_ids: Sequence[str], group_id: int) -> torch.Tensor:
        """[num_seqs] int64: each request's last table entry in the group (one indexing op)."""
        last = torch.tensor([self._lens[r][group_id] - 1 for r in request_ids], dtype=torch.int64)
        return self._tables[group_id][step.rows, last].long()

    def _take_row(self) -> int:
        if self._free_rows:
            return self._free_rows.pop()
        row = self._num_rows
        self._num_rows += 1
        if row >= self._tables[0].shape[0]:
            self._tables = [_grown(t, 2 * t.shape[0], t.shape[1]) for t in self._tables]
        return row

    def _release(self, request_id: str) -> None:
        row = self._row_of.pop(request_id, None)
        if row is None:
            return
        del self._lens[request_id]
        for table in self._tables:
            table[row].zero_()  # padding past a table must stay the null block
        self._free_rows.append(row)

    def _write(self, row: int, group_id: int, start: int, ids: Sequence[int]) -> None:
        table = self._tables[group_id]
        end = start + len(ids)
        if end > table.shape[1]:
            table = self._tables[group_id] = _grown(table, table.shape[0], max(end, 2 * table.shape[1]))
        table[row, start:end] = torch.tensor(ids, dtype=torch.int32)


def _grown(table: torch.Tensor, num_rows: int, width: int) -> torch.Tensor:
    grown = torch.zeros(num_rows, width, dtype=table.dtype)
    grown[:table.shape[0], :table.shape[1]] = table
    return grown
