"""Hand-built tiny Layouts for the runtime tests (no planner involved)."""

from __future__ import annotations

from collections.abc import Sequence

from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, StateCacheSpec
from hkv.planner.layout import KVCacheGroup, Layout, Pool

FULL, SLIDING, CHUNKED, RECURRENT = CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED, CacheKind.RECURRENT


def make_group(kind: CacheKind, block_size: int, *, window: int | None = None, chunk: int | None = None,
               pool_id: int = 0, num_state_blocks: int = 1, layer_id: int = 0) -> KVCacheGroup:
    if kind is RECURRENT:
        spec: AttentionCacheSpec | StateCacheSpec = StateCacheSpec("mamba2", ((4, 8),), (2,))
        page = spec.state_bytes
        state_blocks: int | None = num_state_blocks
    else:
        spec = AttentionCacheSpec(kind, 1, 8, 8, 2, window_len=window, chunk_len=chunk)
        page = spec.page_size_bytes(block_size)
        state_blocks = None
    return KVCacheGroup(kind, (f"layer.{layer_id}",), (layer_id,), spec, block_size, page, pool_id,
                        state_blocks)


def make_layout(groups: Sequence[KVCacheGroup], pool_blocks: Sequence[int], *, max_model_len: int = 64,
                in_flight_tokens: int = 8) -> Layout:
    """`pool_blocks[p]` blocks (null block included) for pool p."""
    groups = tuple(KVCacheGroup(g.kind, (f"layer.{i}",), (i,), g.spec, g.block_size, g.page_size_bytes,
                                g.pool_id, g.num_state_blocks) for i, g in enumerate(groups))
    pools = []
    for pool_id, num_blocks in enumerate(pool_blocks):
        members = [g for g in groups if g.pool_id == pool_id]
        page = max((g.page_size_bytes for g in members), default=1)
        pools.append(Pool(pool_id, "shared" if len(pool_blocks) == 1 else f"pool{pool_id}", num_blocks,
                          page, 1))
    layout = Layout("test", groups, tuple(pools), max_model_len, in_flight_tokens, 0)
    layout.check_integrity()
    return layout


def lone_manager(group: KVCacheGroup):
    """The manager of a one-group layout (for hit-rule tables that need no blocks)."""
    from hkv.runtime import KVCacheManager

    return KVCacheManager(make_layout([group], [2])).coordinator.managers[0]


def reference_hit_len(manager, is_cached, max_len: int, alignment: int) -> int:
    """The longest p <= max_len, a multiple of `alignment`, whose needed blocks
    [num_skipped_blocks(p), p // block_size) are all cached (`is_cached(position)`): every
    candidate tried, longest first. 0 always qualifies."""
    for p in range(max_len // alignment * alignment, 0, -alignment):
        if all(is_cached(pos) for pos in range(manager.num_skipped_blocks(p), p // manager.block_size)):
            return p
    return 0


def hit_len(manager, cached_positions: set[int], max_len: int, alignment: int) -> int:
    """The manager's hit rule through both scans (the reference one over a predicate and the
    coordinator's one over hash maps), which must agree."""
    expected = reference_hit_len(manager, cached_positions.__contains__, max_len, alignment)
    stride = manager.hash_stride
    num_positions = max_len // manager.block_size + 1
    block_hashes = [b"%d-%d" % divmod(i, stride) for i in range(num_positions * stride)]
    cached = {block_hashes[(p + 1) * stride - 1]: p for p in cached_positions if p < num_positions}
    assert manager.longest_hit_len_in([cached], block_hashes, max_len, alignment) == expected
    assert manager.longest_hit_len_in([cached, dict(cached)], block_hashes, max_len, alignment) == expected
    return expected


def ids(blocks_per_group) -> list[list[int]]:
    """Block ids per group as plain lists (None stays None)."""
    return None if blocks_per_group is None else [list(b) for b in blocks_per_group]


def plant(kv, token_ids: list[int], group_id: int, positions: set[int]) -> dict[int, int]:
    """Make positions of one group's chain cached-free, as if an earlier request left them;
    returns position -> block id."""
    hashes = hash_tokens(kv.hasher, token_ids)
    m = kv.coordinator.managers[group_id]
    planted = {}
    for pos in sorted(positions):
        [block_id] = m.pool.allocate(1, group_id)
        assert m.pool.cache_block(block_id, hashes[(pos + 1) * m.hash_stride - 1], group_id)
        planted[pos] = block_id
    m.pool.release_blocks(list(planted.values()))
    return planted


def slot_mapping(kv, request, group_id: int, positions: range) -> list[int]:
    """KV slot of each token position in an attention group, from the manager's live table:
    block_id * block_size + offset (what a runner's BlockTables must agree with)."""
    size = kv.layout.groups[group_id].block_size
    blocks = kv.block_ids(request)[group_id]
    return [blocks[p // size] * size + p % size for p in positions]


def hash_tokens(hasher, token_ids: list[int], cache_salt: str | None = None) -> list[bytes]:
    """The prefix hashes of every full hash block of `token_ids`, as `hasher` gives a request."""
    from hkv.runtime import Request

    request = Request("hash", token_ids, max_output_len=1, cache_salt=cache_salt)
    hasher.extend(request)
    return request.block_hashes
