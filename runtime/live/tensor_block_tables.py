"""TensorBlockTables: the model runner's copy of every running request's block tables, as arrays.

The array twin of `block_tables.BlockTables` (pure Python, which the torch-free simulation
tests use); same `apply` / `table` / `slot_mapping` contract.

Per KV cache group one int32 array [rows, width] kept between steps: a row per running request
(rows are reused once a request finishes or is preempted), entries past a request's table 0
(the null block, never read). Applying a SchedulerOutput writes only what changed: a new
request's whole table, or the entries a continuing one appended (a decode appends one every
block_size tokens). A step's tables are then its requests' rows, selected with one indexing
op per group, and its slot mappings one gather, with no Python int per token.

The arrays are numpy on the CPU: a step's index arithmetic is on a few dozen entries, where a
numpy op costs about a microsecond and a torch op several. What a step hands on is a torch
tensor sharing the result's memory; the runner moves it to its device once per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from hkv.runtime.scheduler.scheduler_output import SchedulerOutput

_INITIAL_ROWS = 16
_INITIAL_WIDTH = 16


class StepRows(NamedTuple):
    """A step's requests as table rows: which row, how many entries each group holds."""

    rows: np.ndarray  # [num_seqs] int64
    widths: tuple[int, ...]  # per group, the longest table among the step's requests


class TensorBlockTables:
    def __init__(self, block_sizes: tuple[int, ...]) -> None:
        self.block_sizes = block_sizes  # per group, tokens per block
        self._row_of: dict[str, int] = {}
        self._lens: dict[str, list[int]] = {}  # per request, per group: entries held
        self._free_rows: list[int] = []
        self._num_rows = 0
        self._tables = [np.zeros((_INITIAL_ROWS, _INITIAL_WIDTH), dtype=np.int32) for _ in block_sizes]

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
        rows = np.fromiter((self._row_of[r] for r in request_ids), dtype=np.int64, count=len(request_ids))
        widths = tuple(max(self._lens[r][g] for r in request_ids) for g in range(len(self.block_sizes)))
        return StepRows(rows, widths)

    def step_table(self, step: StepRows, group_id: int) -> torch.Tensor:
        """[num_seqs, width] int32: the step's rows of the group's table (a copy)."""
        return torch.from_numpy(self._tables[group_id][step.rows, :max(1, step.widths[group_id])])

    def step_slot_mapping(self, step: StepRows, group_id: int, seq_of_token: np.ndarray,
                          positions: np.ndarray) -> torch.Tensor:
        """[num_tokens] int64: slot = block_id * block_size + offset of each token, where token t
        belongs to the step's sequence seq_of_token[t] and sits at positions[t] (one gather)."""
        size = self.block_sizes[group_id]
        blocks = self._tables[group_id][step.rows[seq_of_token], positions // size]
        return torch.from_numpy(blocks.astype(np.int64) * size + positions % size)

    def last_entries(self, step: StepRows, request_ids: Sequence[str], group_id: int) -> torch.Tensor:
        """[num_seqs] int64: each request's last table entry in the group (one indexing op)."""
        last = np.fromiter((self._lens[r][group_id] - 1 for r in request_ids), dtype=np.int64,
                           count=len(request_ids))
        return torch.from_numpy(self._tables[group_id][step.rows, last].astype(np.int64))

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
            table[row] = 0  # padding past a table must stay the null block
        self._free_rows.append(row)

    def _write(self, row: int, group_id: int, start: int, ids: Sequence[int]) -> None:
        table = self._tables[group_id]
        end = start + len(ids)
        if end > table.shape[1]:
            table = self._tables[group_id] = _grown(table, table.shape[0], max(end, 2 * table.shape[1]))
        table[row, start:end] = ids


def _grown(table: np.ndarray, num_rows: int, width: int) -> np.ndarray:
    grown = np.zeros((num_rows, width), dtype=table.dtype)
    grown[:table.shape[0], :table.shape[1]] = table
    return grown
