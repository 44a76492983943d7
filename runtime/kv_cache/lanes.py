"""Lifecycle batches and lanes: which groups of a Layout move in lockstep.

A lifecycle batch is a run of consecutive groups with the same kind, spec, block size, pool and
state count (recurrent groups stay alone): their tables always have the same length, skipped
and cached prefixes, so the coordinator drives each batch through its first manager (its lead).

A lane is a batch whose groups are also held as one allocator entry (LanePool): one table and
one entry per position for the whole batch, so a step's cost does not grow with the number of
groups. Lanes change which blocks are evicted (whole positions of the batch instead of one
group's block), so they are used only where that is allowed:
- the layout is one of hkv's own designs (`hkv`, `partitioned`); the vLLM layouts stay vLLM's
  manager block for block;
- block ids need not be physical (a simulated replay: no tensor is indexed by them);
- DuplicateBlocks.DROP (one entry per prefix hash), the mode hkv's layouts run with;
- the kind keeps a dense per-position table (full, sliding, chunked attention).

It also builds the pools of a Layout (`build_pools`): a BlockPool per pool, a LanePool where a
lane is placed.
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import KVCacheGroup, Layout
from hkv.runtime.kv_cache.block_pool import BlockPool
from hkv.runtime.kv_cache.lane_pool import LanePool

# The layouts that are hkv's own designs (the others reproduce an engine's manager exactly).
HKV_OWN_LAYOUTS = frozenset({"hkv", "partitioned"})
LANE_KINDS = frozenset({CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED})


def batch_key(group: KVCacheGroup) -> tuple[object, ...]:
    """Groups with equal keys follow the same rules (hits, releases, admission bound) in the same pool."""
    return (group.kind, group.spec, group.block_size, group.pool_id, group.num_state_blocks, group.bound)


def lifecycle_batches(layout: Layout) -> list[list[int]]:
    """The group ids of each lifecycle batch, in group order (the first one leads)."""
    batches: list[list[int]] = []
    for gid, group in enumerate(layout.groups):
        if (batches and group.kind is not CacheKind.RECURRENT
                and batch_key(layout.groups[batches[-1][0]]) == batch_key(group)):
            batches[-1].append(gid)
        else:
            batches.append([gid])
    return batches


def lanes_of(layout: Layout, physical_block_ids: bool, drops_duplicates: bool) -> list[list[int]]:
    """The batches held as lanes (two or more groups each), or none (see the module's rules)."""
    if physical_block_ids or not drops_duplicates or layout.name not in HKV_OWN_LAYOUTS:
        return []
    return [gids for gids in lifecycle_batches(layout)
            if len(gids) > 1 and layout.groups[gids[0]].kind in LANE_KINDS]


def build_pools(layout: Layout, lanes: list[list[int]], keep_duplicates: bool) -> dict[int, BlockPool]:
    """The allocator of each pool of the layout, by pool id in the layout's order: a LanePool
    where `lanes` (from lanes_of) places a lane, else a BlockPool (`keep_duplicates`:
    DuplicateBlocks.KEEP)."""
    num_groups = len(layout.groups)
    pools = {p.pool_id: BlockPool(p.pool_id, p.num_blocks, num_groups, keep_duplicates) for p in layout.pools}
    for pool_id, pool_lanes in _lanes_by_pool(layout, lanes).items():
        pools[pool_id] = LanePool(pool_id, pools[pool_id].num_blocks, num_groups, pool_lanes)
    return pools


def _lanes_by_pool(layout: Layout, lanes: list[list[int]]) -> dict[int, dict[int, list[int]]]:
    """Per pool holding a lane: each lead group id placed there and its lane's group ids (the
    pool's other groups each alone); LanePool's `lanes`."""
    lane_pools = {layout.groups[gids[0]].pool_id for gids in lanes}
    lane_leads = {gids[0] for gids in lanes}
    by_pool: dict[int, dict[int, list[int]]] = {pool_id: {} for pool_id in lane_pools}
    for gids in lifecycle_batches(layout):
        pool_id = layout.groups[gids[0]].pool_id
        if pool_id in by_pool:
            if gids[0] in lane_leads:
                by_pool[pool_id][gids[0]] = gids
            else:
                by_pool[pool_id].update({gid: [gid] for gid in gids})
    return by_pool
