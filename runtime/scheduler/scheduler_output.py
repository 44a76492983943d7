"""What one scheduler step hands the model runner."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple


class ScheduledRequest(NamedTuple):
    """One request's share of a step (immutable).

    `block_ids[g]` is group g's whole block table when `is_new` (first step since admission or
    re-admission), else only the entries appended since the request's previous step (usually
    empty); a runner keeps the tables (see BlockTables). Entries the cache later replaced by the
    null block (out of window) are not re-sent: the kernels never read them again.
    `state_copies` lists (group id, source block, destination block) recurrent states to copy,
    all sources read before any destination is written, before the step runs.
    """

    request_id: str
    # The tokens computed this step: a copy of the request's int64 array slice (prefill chunks:
    # no Python int per token), or a 1-tuple (decode). Read it; never mutate it.
    token_ids: Sequence[int]
    positions: range  # their positions; positions.start = tokens already computed
    is_new: bool
    block_ids: tuple[tuple[int, ...], ...]
    state_copies: tuple[tuple[int, int, int], ...]
    emits_token: bool  # the step reaches the request's last known token: sample one

    @property
    def num_tokens(self) -> int:
        return len(self.positions)


@dataclass(frozen=True)
class SchedulerOutput:
    step_id: int
    scheduled: tuple[ScheduledRequest, ...]
    num_batched_tokens: int
    preempted_request_ids: tuple[str, ...]  # freed for recompute this step
    finished_request_ids: tuple[str, ...]  # finished (and freed) since the previous step

    @property
    def is_empty(self) -> bool:
        return not self.scheduled
