"""Requests too long for max_model_len are skipped and counted, as vLLM rejects such a request
and goes on serving the others. A prompt needs room for one output token: prompt_len + 1 must
not exceed max_model_len (the scheduler stops a request's output at max_model_len)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hkv.runtime.simulation.workload_request import WorkloadRequest


def is_too_long(prompt_len: int, max_model_len: int | None) -> bool:
    return max_model_len is not None and prompt_len + 1 > max_model_len


@dataclass(frozen=True)
class TooLongSkips:
    """How many requests were skipped and the first of them (its id and prompt length)."""

    max_model_len: int
    num_skipped: int = 0
    first_request_id: str = ""
    first_prompt_len: int = 0

    def add(self, request_id: str, prompt_len: int) -> TooLongSkips:
        if self.num_skipped:
            return TooLongSkips(self.max_model_len, self.num_skipped + 1, self.first_request_id,
                                self.first_prompt_len)
        return TooLongSkips(self.max_model_len, 1, request_id, prompt_len)


def drop_too_long(requests: Sequence[WorkloadRequest], max_model_len: int) -> tuple[list[WorkloadRequest],
                                                                                     TooLongSkips]:
    """An in-memory workload without its too-long requests; `depends_on` follows the kept
    indices (None when the request depended on was dropped)."""
    skips = TooLongSkips(max_model_len)
    kept: list[WorkloadRequest] = []
    new_index: dict[int, int] = {}
    for i, wr in enumerate(requests):
        if is_too_long(wr.prompt_len, max_model_len):
            skips = skips.add(wr.request_id, wr.prompt_len)
            continue
        new_index[i] = len(kept)
        parent = None if wr.depends_on is None else new_index.get(wr.depends_on)
        kept.append(wr if parent == wr.depends_on else
                    WorkloadRequest(wr.request_id, wr.arrival_s, wr.prompt_token_ids, wr.output_token_ids, parent))
    return kept, skips
