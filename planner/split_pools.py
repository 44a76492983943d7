"""Separate pools per cache kind, sized so they run out together at one sequence length.

Pool p needs c_p = blocks_per_request_p(N) x bytes_per_block_p per request of N tokens; it gets
budget x c_p / sum(c) bytes. With N = max_model_len the pools admit the same number of
max-length requests, which maximizes concurrency at that length; a shorter expected N gives the
state pool a larger share (many short requests need many states but few tokens each).
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind, StateCacheSpec
from hkv.model_specs.layer_desc import CacheLayer
from hkv.model_specs.cache_spec import LayerCacheSpec
from hkv.planner.layout import KVCacheGroup, Pool
from hkv.planner.paged_layer import PagedLayer, bucket_by_spec, unify_page_sizes
from hkv.planner.pool_sizing import bytes_per_block_by_stage, size_pool, to_kv_groups

POOL_OF_KIND = {
    CacheKind.FULL: "global",
    CacheKind.SLIDING: "local",
    CacheKind.CHUNKED: "local",
    CacheKind.RECURRENT: "recurrent",
}
HKV_STATE_BLOCKS = 1  # one live state per request; checkpoints live in cached-free blocks


def state_page_layers(entries: list[tuple[CacheLayer, LayerCacheSpec]],
                      state_block_size: int) -> list[PagedLayer]:
    """Recurrent layers with their natural page: one state, no padding to attention pages."""
    return [PagedLayer(layer.name, layer.layer_idx, spec, state_block_size, spec.state_bytes)
            for layer, spec in entries if isinstance(spec, StateCacheSpec)]


def one_group_per_bucket(layers: list[PagedLayer]) -> list[list[PagedLayer]]:
    return bucket_by_spec(unify_page_sizes(layers))


def build_split_pools(pool_groups: list[tuple[str, list[list[PagedLayer]]]], budget_bytes: int,
                      split_len: int, in_flight_tokens: int, num_hidden_layers: int,
                      pp: int) -> tuple[list[KVCacheGroup], list[Pool]]:
    """Pools (in the given order) sharing `budget_bytes` in proportion to their demand at split_len."""
    demands = []
    staged = []
    for pool_id, (kind, groups) in enumerate(pool_groups):
        kv_groups = to_kv_groups(groups, pool_id, HKV_STATE_BLOCKS)
        bytes_per_block = max(bytes_per_block_by_stage(groups, num_hidden_layers, pp))
        blocks = sum(g.blocks_per_request(split_len, in_flight_tokens) for g in kv_groups)
        demands.append(blocks * bytes_per_block)
        staged.append((pool_id, kind, groups, kv_groups))
    total_demand = sum(demands)
    all_groups: list[KVCacheGroup] = []
    pools: list[Pool] = []
    for (pool_id, kind, groups, kv_groups), demand in zip(staged, demands):
        share = budget_bytes * demand // total_demand if total_demand else 0
        pools.append(size_pool(pool_id, kind, groups, share, num_hidden_layers, pp))
        all_groups.extend(kv_groups)
    return all_groups, pools
