"""The admission gate's arithmetic: per pool, the blocks a request needs to be admitted.

Owns the counts behind KVCacheManager's `can_admit`, `admission_blocked` and
`reserve_worst_case`: each group's admission bound (`admission_blocks`, or the worst case
`blocks_per_request`) less the blocks of a prefix hit already held, plus, with exact
per-request bounds, the blocks admitted requests take next (`promised_blocks`). Module
functions taking explicit arguments; they read the coordinator and the requests' tables and
change nothing. The manager keeps the state (finished requests' output lengths, the
`admission_blocked` memo) and decides with `KVCacheCoordinator.fits`/`fits_unprotected`.
Compiled with mypyc (runtime/build_info.py): the scheduler calls the gate every step.
"""

from __future__ import annotations

from collections.abc import Iterable

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import cdiv
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID
from hkv.runtime.kv_cache.eviction import HitBlocks
from hkv.runtime.kv_cache.kv_cache_coordinator import KVCacheCoordinator
from hkv.runtime.kv_cache.request_blocks import RequestBlocks


def full_groups(coordinator: KVCacheCoordinator) -> list[tuple[int, int]]:
    """(pool index, block size) of each full-attention group: the groups that grow in decode."""
    return [(pool_index, m.block_size)
            for m, pool_index in zip(coordinator.managers, coordinator.pool_index_of_group, strict=True)
            if m.kind is CacheKind.FULL]


def admission_needs(coordinator: KVCacheCoordinator, seq_len: int, in_flight_tokens: int,
                    hit: HitBlocks | None, needs: list[int]) -> list[int]:
    """`needs` (per pool, already taken) plus each group's `admission_blocks(seq_len,
    in_flight_tokens)` less the blocks of the hit `hit` (per group; None: no hit) that are held
    or protected (`num_held_or_protected`), never below 0 per group. A lane's groups share one
    hit list: it is counted once, times the lane's groups. Returns `needs`, added to in place."""
    if coordinator.lane_of is not None:
        for m, pool_index in zip(coordinator.leads, coordinator._lead_pool_index, strict=True):
            need = m.group.admission_blocks(seq_len, in_flight_tokens)
            if hit is not None:
                if m.lane:
                    need -= m.pool.num_held_or_protected(hit[m.group_id])
                    needs[pool_index] += max(0, need) * len(m.gids)
                    continue
                for gid in m.gids:
                    needs[pool_index] += max(0, need - m.pool.num_held_or_protected(hit[gid]))
                continue
            needs[pool_index] += max(0, need) * len(m.gids)
        return needs
    for m, pool_index in zip(coordinator.managers, coordinator.pool_index_of_group, strict=True):
        need = m.group.admission_blocks(seq_len, in_flight_tokens)
        if hit is not None:
            need -= m.pool.num_held_or_protected(hit[m.group_id])
        needs[pool_index] += max(0, need)
    return needs


def promised_blocks(coordinator: KVCacheCoordinator, requests: Iterable[RequestBlocks],
                    full: list[tuple[int, int]], mean_output_len: int, max_model_len: int,
                    in_flight_tokens: int) -> list[int]:
    """Per pool: blocks the running `requests` take next. A request in prefill: the blocks of
    its prompt it has yet to take (its admission counted them against free blocks, but they
    are taken chunk by chunk, so a later admission could count them again). A decoding
    request: in each full-attention group (`full`, see full_groups), the blocks it grows by
    until its output reaches `mean_output_len` (the mean output of the requests finished so
    far), at least its next block (its own output length is not known, as a real scheduler
    does not know it)."""
    needs = [0] * len(coordinator.pool_list)
    for rb in requests:
        request = rb.request
        num_computed = request.num_computed_tokens
        if num_computed >= request.num_prompt_tokens:
            left = max(0, mean_output_len - (request.num_tokens - request.num_prompt_tokens))
            for pool_index, block_size in full:
                needs[pool_index] += max(1, cdiv(num_computed + left, block_size) - cdiv(num_computed, block_size))
            continue
        prompt_len = min(request.num_prompt_tokens, max_model_len)
        # The groups of a batch hold tables of one shape (same length, same nulls) and have
        # one admission bound: count the batch once, times its groups.
        for m, pool_index in zip(coordinator.leads, coordinator._lead_pool_index, strict=True):
            table = rb.block_ids[m.group_id]
            held = len(table) - table.count(NULL_BLOCK_ID)
            needs[pool_index] += max(0, m.group.admission_blocks(prompt_len, in_flight_tokens) - held) * len(m.gids)
    return needs


def blocked_needs(coordinator: KVCacheCoordinator, num_tokens: int, hit_len: int | None, max_model_len: int,
                  in_flight_tokens: int, enable_caching: bool) -> list[int]:
    """Per pool: the fewest blocks a request of `num_tokens` tokens needs for admission with its
    best prefix hit (`hit_len` None: any hit a lookup may find, at most num_tokens - 1 tokens,
    none with caching off) or with any hit of `hit_len` tokens, every non-null block of the hit
    discounted (held by others)."""
    seq_len = min(num_tokens, max_model_len)
    max_len = min(num_tokens - 1, max_model_len) if enable_caching else 0
    needs = [0] * len(coordinator.pool_list)
    for m, pool_index in zip(coordinator.managers, coordinator.pool_index_of_group, strict=True):
        if hit_len is None:
            discount = m.max_hit_blocks(max_len)
        else:
            discount = hit_len // m.block_size - m.hit_first_block(hit_len)
        need = m.group.admission_blocks(seq_len, in_flight_tokens) - discount
        if need > 0:
            needs[pool_index] += need
    return needs


def worst_case_counts(coordinator: KVCacheCoordinator, seq_len: int,
                      in_flight_tokens: int) -> tuple[list[int], list[int]]:
    """Per group, its worst-case `blocks_per_request(seq_len, in_flight_tokens)` blocks, and
    their sum per pool."""
    counts = [m.group.blocks_per_request(seq_len, in_flight_tokens) for m in coordinator.managers]
    needs = [0] * len(coordinator.pool_list)
    for count, pool_index in zip(counts, coordinator.pool_index_of_group, strict=True):
        needs[pool_index] += count
    return counts, needs
