"""One request of a simulated workload: what arrives, what it asks, what the fake model emits."""

from __future__ import annotations

from array import array
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkloadRequest:
    """`prompt_token_ids` / `output_token_ids` are int64 arrays (cheap to build, copy and hash).

    `depends_on` is the index of an earlier request that must finish first (the previous turn of
    a session, whose prompt and output this prompt resends); the request arrives at
    max(arrival_s, that request's finish time).
    """

    request_id: str
    arrival_s: float
    prompt_token_ids: array
    output_token_ids: array
    depends_on: int | None = None

    @property
    def prompt_len(self) -> int:
        return len(self.prompt_token_ids)

    @property
    def output_len(self) -> int:
        return len(self.output_token_ids)
