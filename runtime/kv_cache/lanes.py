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
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import KVCacheGroup, Layout

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
