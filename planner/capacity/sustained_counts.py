"""The count model's arithmetic shared by the sustained walks (sustained.py, sustained_walk.py): the
blocks one request holds per group, one request's step against the free blocks, and the tables the
walks read (groups collapsed by what they hold, the decode residues that change anything)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import KVCacheGroup, cdiv


def held_blocks(group: KVCacheGroup, computed_len: int, total_len: int) -> int:
    """Blocks of `group` one request holds after releasing to `computed_len` computed tokens and
    allocating slots up to `total_len` tokens (prefix caching off)."""
    return _HELD[group.kind](group, computed_len, total_len)


def _full_held(g: KVCacheGroup, c: int, t: int) -> int:
    return cdiv(t, g.block_size)


def _sliding_held(g: KVCacheGroup, c: int, t: int) -> int:
    window = g.spec.window_len  # type: ignore[union-attr]
    assert window is not None
    return cdiv(t, g.block_size) - max(0, c - window + 1) // g.block_size


def _chunked_held(g: KVCacheGroup, c: int, t: int) -> int:
    chunk = g.spec.chunk_len  # type: ignore[union-attr]
    assert chunk is not None
    return cdiv(t, g.block_size) - c // chunk * chunk // g.block_size


def _state_held(g: KVCacheGroup, c: int, t: int) -> int:
    assert g.num_state_blocks is not None
    live = 1 if c > 0 else 0
    if cdiv(t, g.block_size) <= cdiv(c, g.block_size):
        return live  # the live state stays in its block
    return live + 1 - max(0, live - g.num_state_blocks + 1)


def _ring_held(g: KVCacheGroup, c: int, t: int) -> int:
    return 1 if t > 0 else 0  # one ring block from the first allocation on


_HELD: dict[CacheKind, Callable[[KVCacheGroup, int, int], int]] = {
    CacheKind.FULL: _full_held,
    CacheKind.SLIDING: _sliding_held,
    CacheKind.CHUNKED: _chunked_held,
    CacheKind.RECURRENT: _state_held,
    CacheKind.CIRCULAR: _ring_held,
}


def grow_request(groups: Sequence[KVCacheGroup], weights: Sequence[int], gpool: Sequence[int], free: list[int],
                 mine: list[int], computed_len: int, total_len: int) -> bool:
    """One request's step: release per group what fell out of its window (to `computed_len`; 0 for
    a request holding nothing), then allocate slots up to `total_len` tokens if every pool has them.
    Mutates `free` (per pool) and `mine` (the request's blocks per group); False leaves the release
    done and nothing allocated, as vLLM's allocator does."""
    want = [0] * len(groups)
    need = [0] * len(free)
    for i, g in enumerate(groups):
        k, p = weights[i], gpool[i]
        after_release = held_blocks(g, computed_len, computed_len)
        free[p] += (mine[i] - after_release) * k
        mine[i] = after_release
        want[i] = held_blocks(g, computed_len, total_len)
        need[p] += (want[i] - after_release) * k
    if any(n > f for n, f in zip(need, free)):
        return False
    for i, k in enumerate(weights):
        free[gpool[i]] -= (want[i] - mine[i]) * k
        mine[i] = want[i]
    return True


def collapsed(groups: tuple[KVCacheGroup, ...]) -> tuple[tuple[KVCacheGroup, ...], tuple[int, ...]]:
    """One group per (pool, spec, block size, state blocks, bound): what held_blocks and
    admission_blocks read. In first-seen order, with how many groups each stands for."""
    firsts: dict[tuple[object, ...], int] = {}
    kept: list[KVCacheGroup] = []
    counts: list[int] = []
    for g in groups:
        key = (g.pool_id, g.kind, g.spec, g.block_size, g.num_state_blocks, g.bound)
        if key in firsts:
            counts[firsts[key]] += 1
        else:
            firsts[key] = len(kept)
            kept.append(g)
            counts.append(1)
    return tuple(kept), tuple(counts)


def decode_changes(groups: tuple[KVCacheGroup, ...], period: int) -> tuple[int, frozenset[int]]:
    """(base, changing residues): a decode step at c computed tokens may change something unless
    c >= base and c % period is not in `changing`. Such a step, following a decode step (held =
    held_blocks(g, c - 1, c) in every group), releases and allocates nothing in any group, i.e. held_blocks(g, c, c) == held_blocks(g, c - 1, c) == held_blocks(g, c, c + 1).
    Past every window and chunk (from c > reach, where a sliding group's release no longer sees the
    request's start) whether a step changes anything is periodic in c with `period` (the lcm of
    block sizes and chunk lengths): the base is the first multiple of period above the reach, the
    residues that change are found by trying one period, and below the base every step counts as
    changing. (A base two periods up, as before, kept every decoder of a layout whose period is
    half its requests' length walking one by one.)"""
    reach = max([g.spec.window_len or 0 for g in groups if g.kind is CacheKind.SLIDING]  # type: ignore[union-attr]
                + [g.spec.chunk_len or 0 for g in groups if g.kind is CacheKind.CHUNKED] + [0])  # type: ignore[union-attr]
    base = (reach // period + 1) * period
    changing = frozenset(
        c % period for c in range(base, base + period)
        if any(held_blocks(g, c, c) != held_blocks(g, c - 1, c) or held_blocks(g, c, c + 1) != held_blocks(g, c, c)
               for g in groups))
    return base, changing
