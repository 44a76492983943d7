"""The Layout: the contract between the planner and the runtime.

A Layout says which cache layers share a block table (groups), how many tokens a block covers
per group, how many bytes one layer slot of a block takes, and how many blocks each pool has.
The runtime allocates exactly this and its admission gate uses `blocks_per_request`, so the
capacity the planner prints and the capacity the runtime reaches come from one formula.

Pool memory, layer-outer (as vLLM's default LBNHC layout):

    pool p: num_slots regions x num_blocks pages of page_size_bytes
    block b of group g uses page b of slots 0..len(g.layer_names)-1; slots past that are padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, LayerCacheSpec


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class BlockBound(Enum):
    """How a group bounds the blocks one request may hold (`blocks_per_request`).

    VLLM: vLLM's own max_memory_usage_bytes, kept exactly so that its log lines are reproduced: a
    sliding group is charged W - 1 + T tokens plus one block for window/block misalignment even
    when that is more than the whole sequence has (W - 1 + T >= L gives cdiv(L, b) + 1).
    EXACT: the same, but never more than the cdiv(L, b) blocks the sequence has, which is all a
    sliding request can ever hold. hkv's own layout counts this way.
    """

    VLLM = "vllm"
    EXACT = "exact"


@dataclass(frozen=True)
class KVCacheGroup:
    """Cache layers with one spec that share one block table.

    `num_state_blocks` is the number of state blocks a recurrent group holds per request
    (vLLM align mode: 2 live + 1 prefill checkpoint; hkv: 1); None for attention groups.
    `bound` says how `blocks_per_request` counts (BlockBound).
    """

    kind: CacheKind
    layer_names: tuple[str, ...]
    layer_ids: tuple[int, ...]
    spec: LayerCacheSpec
    block_size: int  # tokens per block (recurrent: tokens between state checkpoints)
    page_size_bytes: int  # one layer slot of one block, padding included (mean of a mixed uniform-type group)
    pool_id: int = 0
    num_state_blocks: int | None = None
    bound: BlockBound = BlockBound.VLLM

    @property
    def num_layers(self) -> int:
        return len(self.layer_names)

    def blocks_per_request(self, seq_len: int, in_flight_tokens: int) -> int:
        """Blocks one request of `seq_len` tokens may hold at once (vLLM's max_memory_usage_bytes / page).

        full: cdiv(L, bs); sliding: cdiv(min(W-1+T, L), bs) + 1 (window/block misalignment),
        at most cdiv(L, bs) under BlockBound.EXACT; chunked: cdiv(min(C+T, L), bs); recurrent:
        `num_state_blocks`.
        """
        return _BLOCKS_PER_REQUEST[self.kind](self, seq_len, in_flight_tokens)

    def admission_blocks(self, num_tokens: int, in_flight_tokens: int) -> int:
        """Blocks the admission gate asks free for a request of `num_tokens` tokens holding
        nothing (vLLM 0.32's `scheduler_reserve_full_isl` check), at most cdiv(n, bs): attention
        groups reserve slots for all of them, capped at `blocks_per_request` (what a sliding or
        chunked layer ever holds); a recurrent group its first allocation: the live state plus the
        prefill checkpoint when it keeps one (vLLM align mode: num_state_blocks - 1 of its 2 live
        + checkpoint blocks; the second live block is taken later, crossing a state boundary)."""
        bound = self.blocks_per_request(num_tokens, in_flight_tokens)
        if self.kind is CacheKind.RECURRENT:
            bound = max(1, bound - 1)
        return min(cdiv(num_tokens, self.block_size), bound)

    def ideal_bytes(self, seq_len: int) -> int:
        """Bytes this group's layers must keep for one request: kept tokens or one state each. A
        uniform-type group of mixed head sizes keeps its mean bytes per token (page_size_bytes)."""
        per_layer = self.spec.ideal_bytes(seq_len)
        if isinstance(self.spec, AttentionCacheSpec):
            head_page = self.spec.bytes_per_token * self.block_size
            if head_page != self.page_size_bytes:
                return self.num_layers * per_layer * self.page_size_bytes // head_page
        return self.num_layers * per_layer


def _full_blocks(g: KVCacheGroup, seq_len: int, t: int) -> int:
    return cdiv(seq_len, g.block_size)


def _sliding_blocks(g: KVCacheGroup, seq_len: int, t: int) -> int:
    window = g.spec.window_len  # type: ignore[union-attr]
    assert window is not None, "sliding group without a window"
    blocks = cdiv(min(window - 1 + t, seq_len), g.block_size) + 1
    return blocks if g.bound is BlockBound.VLLM else min(blocks, cdiv(seq_len, g.block_size))


def _chunked_blocks(g: KVCacheGroup, seq_len: int, t: int) -> int:
    chunk = g.spec.chunk_len  # type: ignore[union-attr]
    assert chunk is not None, "chunked group without a chunk length"
    return cdiv(min(chunk + t, seq_len), g.block_size)


def _state_blocks(g: KVCacheGroup, seq_len: int, t: int) -> int:
    assert g.num_state_blocks is not None
    return g.num_state_blocks


def _ring_blocks(g: KVCacheGroup, seq_len: int, t: int) -> int:
    return 1  # vLLM CircularBufferSpec.max_num_blocks_per_req: one block for the request's life


_BLOCKS_PER_REQUEST = {
    CacheKind.FULL: _full_blocks,
    CacheKind.SLIDING: _sliding_blocks,
    CacheKind.CHUNKED: _chunked_blocks,
    CacheKind.RECURRENT: _state_blocks,
    CacheKind.CIRCULAR: _ring_blocks,
}


@dataclass(frozen=True)
class Pool:
    """One block pool: `num_blocks` blocks (block 0 is the null block) of `bytes_per_block` each.

    `num_slots` is the number of layer slots per block: the largest group of the pool.
    """

    pool_id: int
    kind: str  # "shared" for a single pool, else the cache kind it serves
    num_blocks: int
    bytes_per_block: int
    num_slots: int

    @property
    def num_bytes(self) -> int:
        return self.num_blocks * self.bytes_per_block


@dataclass(frozen=True)
class Layout:
    """A complete allocator layout for one rank (the tightest pipeline stage)."""

    name: str
    groups: tuple[KVCacheGroup, ...]
    pools: tuple[Pool, ...]
    max_model_len: int
    in_flight_tokens: int  # T: tokens a request may have scheduled beyond what is processed
    available_bytes: int  # KV budget of the rank the layout was sized for
    notes: tuple[str, ...] = ()
    pp_size: int = 1  # pipeline stages; pools are sized for the tightest stage's share of layers

    def groups_of(self, pool_id: int) -> tuple[KVCacheGroup, ...]:
        return tuple(g for g in self.groups if g.pool_id == pool_id)

    def padding_slots(self) -> int:
        """Empty layer slots summed over groups (vLLM's "Add N padding layers")."""
        slots = {p.pool_id: p.num_slots for p in self.pools}
        return sum(slots[g.pool_id] - g.num_layers for g in self.groups)

    def blocks_per_request(self, seq_len: int) -> tuple[int, ...]:
        """Per group, in group order."""
        return tuple(g.blocks_per_request(seq_len, self.in_flight_tokens) for g in self.groups)

    def pool_blocks_per_request(self, pool_id: int, seq_len: int) -> int:
        return sum(g.blocks_per_request(seq_len, self.in_flight_tokens) for g in self.groups_of(pool_id))

    def max_concurrency(self, seq_len: int) -> float:
        """vLLM's "Maximum concurrency": num_blocks / blocks per request (null block included)."""
        return min(
            p.num_blocks / self.pool_blocks_per_request(p.pool_id, seq_len)
            for p in self.pools if self.groups_of(p.pool_id)
        ) if self.groups else float("inf")

    def max_num_requests(self, seq_len: int) -> int:
        """Requests of `seq_len` tokens that fit at once, each holding its worst-case blocks.

        Excludes the null block, so this is what an admission gate can really grant.
        """
        if not self.groups:
            return 0
        return min(
            max(0, p.num_blocks - 1) // self.pool_blocks_per_request(p.pool_id, seq_len)
            for p in self.pools if self.groups_of(p.pool_id)
        )

    def ideal_bytes_per_request(self, seq_len: int) -> int:
        return sum(g.ideal_bytes(seq_len) for g in self.groups)

    def physical_limit_concurrency(self, seq_len: int) -> float:
        """Pool bytes / ideal bytes per request: the concurrency no layout of these pools can
        beat (every byte holding needed data: L tokens per full layer, W per sliding, C per
        chunked, one state per recurrent layer). 0.0 without groups."""
        ideal = self.ideal_bytes_per_request(seq_len)
        if ideal == 0:
            return 0.0
        return sum(p.num_bytes for p in self.pools) / ideal

    def waste_fraction(self, seq_len: int) -> float:
        """Share of the pools' bytes that do not hold needed data when full of `seq_len` requests.

        1 - concurrency x ideal bytes per request / pool bytes. It counts padding slots, block
        rounding, padded pages, extra state blocks, the in-flight allowance and unbalanced pools.
        """
        total = sum(p.num_bytes for p in self.pools)
        if total == 0 or not self.groups:
            return 0.0
        used = self.max_concurrency(seq_len) * self.ideal_bytes_per_request(seq_len)
        return max(0.0, 1.0 - used / total)

    def max_context_len(self, concurrency: int, upper_len: int) -> int:
        """Longest length (<= upper_len) at which `concurrency` requests fit at once; 0 if none."""
        if self.max_num_requests(1) < concurrency:
            return 0
        lo, hi = 1, upper_len  # invariant: lo fits
        if self.max_num_requests(hi) >= concurrency:
            return hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.max_num_requests(mid) >= concurrency:
                lo = mid
            else:
                hi = mid
        return lo

    def kv_cache_tokens(self, seq_len: int) -> int:
        """vLLM's current "KV cache size" number: int(concurrency x max_model_len)."""
        return int(self.max_concurrency(seq_len) * seq_len)

    def check_integrity(self) -> None:
        pool_ids = {p.pool_id for p in self.pools}
        names = [n for g in self.groups for n in g.layer_names]
        assert len(names) == len(set(names)), "a layer is in two groups"
        for g in self.groups:
            assert g.pool_id in pool_ids
            pool = next(p for p in self.pools if p.pool_id == g.pool_id)
            if self.pp_size == 1:
                assert g.num_layers <= pool.num_slots
                assert g.num_layers * g.page_size_bytes <= pool.bytes_per_block
        for p in self.pools:
            assert p.num_blocks >= 0 and p.bytes_per_block > 0

