"""RequestBlocks: what the KV cache manager keeps for one request that holds blocks.

The KVCacheManager creates one when it admits a request (or reserves blocks for it), hands it to
the coordinator, the kind managers and the eviction policy, and drops it when the request is
freed. Nothing outside hkv.runtime.kv_cache writes it; the scheduler and the model runner read
block tables and take state copies through the manager (`block_ids`, `take_state_copies`).

    block_ids[g][i]   the block holding tokens [i * block_size_g, (i + 1) * block_size_g) of
                      group g, or the null block where the group skips them

With lanes (lanes.py) the groups of a lane share one table: `block_ids[g]` is the very list of
the lane's lead (`lane_of[g]`), whose entries stand for one block of each of its groups.
"""

from __future__ import annotations

from collections.abc import Sequence

from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID
from hkv.runtime.request import Request


class RequestBlocks:
    """One request's block tables and the manager's bookkeeping over them (mutable)."""

    __slots__ = (
        "request", "block_ids", "num_cached_blocks", "num_skipped_blocks", "state_copies",
        "expected_hit_lens", "closed_hit_len", "protects_early_releases", "protected_block_ids",
        "steady_until_computed", "steady_until_tokens", "lane_of",
    )

    def __init__(self, request: Request, num_groups: int, lane_of: Sequence[int] | None = None) -> None:
        self.request = request  # its tokens, hashes and progress (the scheduler's)
        # Per group: the group whose table it shares (itself unless it follows a lane's lead).
        self.lane_of = lane_of
        if lane_of is None:
            self.block_ids: list[list[int]] = [[] for _ in range(num_groups)]
        else:
            tables: list[list[int]] = [[] for _ in range(num_groups)]
            self.block_ids = [tables[lead] for lead in lane_of]
        self.num_cached_blocks = [0] * num_groups  # per group: leading blocks already cached
        self.num_skipped_blocks = [0] * num_groups  # per group: leading entries that are null
        # (group id, source block id, destination block id): recurrent states to copy before the
        # next step reads them; filled by the recurrent managers, taken by the scheduler.
        self.state_copies: list[tuple[int, int, int]] = []
        # Lengths where a later request is expected to hit this one's prefix (sparse caching of
        # sliding-window blocks, see SlidingRetention).
        self.expected_hit_lens: list[int] = []
        # The full-attention (downward-closed) hit of the lookup that admitted the request.
        self.closed_hit_len = 0
        # The eviction policy's: whether the cached blocks this request releases early are
        # protected (group-aware eviction, see GroupAwareEviction.note_admission), and per group
        # the blocks it protected (the owner lists the policy checks when the request stops).
        self.protects_early_releases = False
        self.protected_block_ids: list[list[int]] = [[] for _ in range(num_groups)]
        # While num_computed_tokens < steady_until_computed (None: no bound) and a step's token
        # total stays <= steady_until_tokens, allocate_slots has nothing to cache, release or
        # allocate (see `is_steady`). 0, 0: not known yet, never steady.
        self.steady_until_computed: int | None = 0
        self.steady_until_tokens = 0

    def is_steady(self, num_computed: int, num_tokens: int) -> bool:
        """The "nothing new to allocate" rule: a step from `num_computed` computed tokens to a
        total of `num_tokens` slots caches, releases and allocates nothing, and no state copy
        waits to be handed to the model runner."""
        until_computed = self.steady_until_computed
        return ((until_computed is None or num_computed < until_computed)
                and num_tokens <= self.steady_until_tokens and not self.state_copies)

    def steady_decode_until(self) -> int:
        """The computed-token count below which a one-token step is steady (`is_steady(n,
        n + 1)` for every smaller n); 0 while a state copy waits."""
        if self.state_copies:
            return 0
        until_computed = self.steady_until_computed
        if until_computed is None:
            return self.steady_until_tokens
        return min(until_computed, self.steady_until_tokens)

    def check_integrity(self, num_groups: int) -> list[tuple[int, int]]:
        """Check the table invariants; return the (block id, group id) reference of every
        non-null block the request holds (one per lane: a lane's groups share its entries).
        Raises AssertionError."""
        tag = f"request {self.request.request_id}"
        assert len(self.block_ids) == num_groups, f"{tag}: {len(self.block_ids)} tables"
        references: list[tuple[int, int]] = []
        lane_of = self.lane_of
        num_leads = num_groups if lane_of is None else sum(lead == gid for gid, lead in enumerate(lane_of))
        assert len({id(t) for t in self.block_ids}) == num_leads, f"{tag}: tables shared outside a lane"
        for gid, blocks in enumerate(self.block_ids):
            skipped = self.num_skipped_blocks[gid]
            if lane_of is not None and lane_of[gid] != gid:
                lead = lane_of[gid]
                assert blocks is self.block_ids[lead], f"{tag}: group {gid} left the table of its lane {lead}"
                assert (skipped, self.num_cached_blocks[gid]) == (
                    self.num_skipped_blocks[lead], self.num_cached_blocks[lead]), (
                    f"{tag}: group {gid} out of step with its lane {lead}")
                continue
            assert all(b == NULL_BLOCK_ID for b in blocks[:skipped]), (
                f"{tag}: group {gid} holds a block before its skipped frontier {skipped}")
            references.extend((b, gid) for b in blocks[skipped:] if b != NULL_BLOCK_ID)
        return references
