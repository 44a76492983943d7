"""Request: the mutable state of one request as the scheduler and the KV cache manager see it."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from enum import Enum


class RequestStatus(str, Enum):
    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTED = "preempted"  # freed for recompute; waits again with its tokens so far
    FINISHED = "finished"


class Request:
    """Token ids (prompt, then outputs), progress, prefix hashes, status: what the scheduler owns.

    The blocks a request holds are the KV cache manager's (its RequestBlocks, read through
    `KVCacheManager.block_ids`). `block_hashes` holds one hash per full hash block, appended
    incrementally by the manager's hasher (see block_hash.py). `token_ids` is an int64 array (no
    Python int per token; an int64 array prompt is copied with one memcpy).
    """

    __slots__ = (
        "request_id", "token_ids", "num_prompt_tokens", "max_output_len", "cache_salt",
        "num_computed_tokens", "block_hashes", "status", "num_preemptions", "steady_decode_until",
    )

    def __init__(
        self,
        request_id: str,
        prompt_token_ids: Sequence[int],
        max_output_len: int,
        cache_salt: str | None = None,
    ) -> None:
        if not prompt_token_ids:
            raise ValueError(f"request {request_id}: empty prompt")
        if max_output_len < 1:
            raise ValueError(f"request {request_id}: max_output_len must be >= 1, got {max_output_len}")
        self.request_id = request_id
        self.token_ids = array("q", prompt_token_ids)
        self.num_prompt_tokens = len(self.token_ids)
        self.max_output_len = max_output_len
        self.cache_salt = cache_salt
        self.num_computed_tokens = 0
        self.block_hashes: list[bytes] = []
        self.status = RequestStatus.WAITING
        self.num_preemptions = 0
        # Written by the KV cache manager: while num_computed_tokens is below it, a one-token
        # step of this request needs nothing new from the cache (KVCacheManager.is_steady(r, 1));
        # 0 when it holds no blocks or a state copy waits. The scheduler's per-step check.
        self.steady_decode_until = 0

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def num_output_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    def append_output_token(self, token_id: int) -> None:
        self.token_ids.append(token_id)

    def __repr__(self) -> str:
        return (f"Request({self.request_id!r}, tokens={self.num_tokens}, "
                f"computed={self.num_computed_tokens}, {self.status.value})")
