"""runs_clean (steady decoders grouped by residue) equals runs_clean_each (every request at
every step) for every N, on layouts long enough that decoders turn steady, with pools from
roomy to tight so both the summed and the in-order steady steps run; and the probes of one search
sharing the walk of the cap (clean_probe) answer as runs_clean_each for every N, in any order."""

from __future__ import annotations

import itertools

import pytest

from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, StateCacheSpec
from hkv.planner.layout import KVCacheGroup, Layout, Pool
from hkv.planner.capacity.sustained import SustainedSetup, clean_probe, runs_clean, runs_clean_each

FULL, SLIDING, CHUNKED, RECURRENT = CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED, CacheKind.RECURRENT


def group(kind: CacheKind, block_size: int, *, window: int | None = None, chunk: int | None = None,
          pool_id: int = 0, num_state_blocks: int = 1) -> tuple[object, ...]:
    return kind, block_size, window, chunk, pool_id, num_state_blocks


def layout(groups: list[tuple[object, ...]], pool_blocks: list[int], max_model_len: int, in_flight: int) -> Layout:
    built = []
    for i, (kind, block_size, window, chunk, pool_id, state_blocks) in enumerate(groups):
        if kind is RECURRENT:
            spec: AttentionCacheSpec | StateCacheSpec = StateCacheSpec("mamba2", ((4, 8),), (2,))
            page, states = spec.state_bytes, state_blocks
        else:
            spec = AttentionCacheSpec(kind, 1, 8, 8, 2, window_len=window, chunk_len=chunk)
            page, states = spec.page_size_bytes(block_size), None
        built.append(KVCacheGroup(kind, (f"layer.{i}",), (i,), spec, block_size, page, pool_id, states))
    pools = tuple(Pool(p, f"pool{p}", n, max(g.page_size_bytes for g in built if g.pool_id == p), 1)
                  for p, n in enumerate(pool_blocks))
    result = Layout("test", tuple(built), pools, max_model_len, in_flight, 0)
    result.check_integrity()
    return result


GROUP_SETS = {
    "full": [group(FULL, 4)],
    "sliding": [group(SLIDING, 4, window=6)],
    "3 sliding + full": [group(SLIDING, 2, window=5)] * 3 + [group(FULL, 2)],
    "full+chunked": [group(FULL, 4), group(CHUNKED, 4, chunk=8)],
    "full+mamba(2)": [group(FULL, 2), group(RECURRENT, 4, num_state_blocks=2)],
    "two pools": [group(FULL, 4), group(SLIDING, 4, window=7, pool_id=1)],
    "window past the prompt": [group(FULL, 4), group(SLIDING, 4, window=60)],
}


def cases():
    for (name, groups), max_len, budget, output_len, share in itertools.product(
            GROUP_SETS.items(), (48, 80), (12, 40), (None, 20, 1), (2, 4, 7)):
        num_pools = 1 + max(g[4] for g in groups)  # type: ignore[operator]
        yield name, groups, max_len, budget, output_len, [max_len * share // 4 + 3] * num_pools


@pytest.mark.parametrize("case", list(cases()), ids=lambda c: f"{c[0]}-{c[2]}-{c[3]}-{c[4]}-{c[5][0]}")
def test_grouped_walk_equals_the_walk_of_each_request(case):
    name, groups, max_len, budget, output_len, pools = case
    plan_layout = layout(groups, pools, max_len, 2 * budget // 3)
    setup = SustainedSetup(max_num_batched_tokens=budget, max_num_seqs=40, output_len=output_len)
    for n in range(1, 41):
        assert runs_clean(plan_layout, n, setup) == runs_clean_each(plan_layout, n, setup), n


PROBE_ORDERS = {
    "ascending": lambda cap: list(range(1, cap + 1)),
    "descending": lambda cap: list(range(cap, 0, -1)),
    "gallop": lambda cap: [cap // 2, cap // 2 + 1, cap // 2 + 3, cap // 2 + 7, cap // 3, 1, cap] + list(range(1, cap + 1)),
}


@pytest.mark.parametrize("order", PROBE_ORDERS)
@pytest.mark.parametrize("case", list(cases()), ids=lambda c: f"{c[0]}-{c[2]}-{c[3]}-{c[4]}-{c[5][0]}")
def test_probes_sharing_the_cap_walk_equal_the_walk_of_each_request(case, order):
    name, groups, max_len, budget, output_len, pools = case
    plan_layout = layout(groups, pools, max_len, 2 * budget // 3)
    setup = SustainedSetup(max_num_batched_tokens=budget, max_num_seqs=40, output_len=output_len)
    cap = min(40, budget)  # above max_num_batched_tokens the probe walks each N on its own
    is_clean = clean_probe(plan_layout, setup, cap)
    for n in [n for n in PROBE_ORDERS[order](cap) if 1 <= n <= cap]:
        assert is_clean(n) == runs_clean_each(plan_layout, n, setup), n
