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
    """Token ids (prompt, then outputs), progress, prefix hashes and one block table per group.

    `block_ids[g][i]` is the block holding tokens [i * block_size_g, (i + 1) * block_size_g) of
    group g (the null block where the group skips them). The KV cache manager owns `block_ids`,
    `num_cached_blocks`, `num_skipped_blocks`, `protected_block_ids`, `state_copies`,
    `expected_hit_lens`, `closed_hit_len`, `protects_early_releases` and the
    `steady_until_*` bounds;
    the scheduler owns the rest.
    `block_hashes` holds one hash per full hash block, appended incrementally (see block_hash.py).
    `token_ids` is an int64 array (no Python int per token; an int64 array prompt is copied with
    one memcpy).
    """

    __slots__ = (
        "request_id", "token_ids", "num_prompt_tokens", "max_output_len", "cache_salt",
        "num_computed_tokens", "block_hashes", "block_ids", "num_cached_blocks", "num_skipped_blocks",
        "protected_block_ids",
        "status",
        "num_preemptions", "steady_until_computed", "steady_until_tokens", "state_copies",
        "expected_hit_lens", "closed_hit_len", "protects_early_releases",
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
        self.block_ids: list[list[int]] = []
        self.num_cached_blocks: list[int] = []  # per group: leading blocks already cached
        self.num_skipped_blocks: list[int] = []  # per group: leading entries that are null
        self.protected_block_ids: list[list[int]] = []  # per group: released early, protected
        self.status = RequestStatus.WAITING
        self.num_preemptions = 0
        # While num_computed_tokens < steady_until_computed (None: no bound) and the step's token
        # total stays <= steady_until_tokens, allocate_slots has nothing to cache, release or
        # allocate.
        self.steady_until_computed: int | None = 0
        self.steady_until_tokens = 0
        # (group id, source block id, destination block id): recurrent states to copy before the
        # next step reads them; filled by the KV cache manager, drained by the scheduler.
        self.state_copies: list[tuple[int, int, int]] = []
        # Lengths where a later request is expected to hit this one's prefix (sparse caching of
        # sliding-window blocks, see SlidingRetention); set by the KV cache manager.
        self.expected_hit_lens: list[int] = []
        # The full-attention (downward-closed) hit of the last lookup, and whether the blocks
        # this request releases early are protected (group-aware eviction, see
        # GroupAwareEviction.note_admission); set by the KV cache manager.
        self.closed_hit_len = 0
        self.protects_early_releases = False

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
