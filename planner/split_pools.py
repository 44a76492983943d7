"""Separate pools per cache kind, sized so they run out together at one sequence length.

Pool p needs c_p = blocks_per_request_p(N) x bytes_per_block_p per request of N tokens. With
N = max_model_len the pools admit the same number of max-length requests, which maximizes
concurrency at that length; a shorter expected N gives the local and state pools a larger share
(many short requests need many states and windows but few global tokens each).
"""

from __future__ import annotations

from typing import NamedTuple

from hkv.model_specs.cache_spec import CacheKind, LayerCacheSpec, StateCacheSpec
from hkv.model_specs.layer_desc import CacheLayer
from hkv.planner.layout import BlockBound, KVCacheGroup, Pool
from hkv.planner.paged_layer import PagedLayer, bucket_by_spec, uniform_type, unify_page_sizes
from hkv.planner.pool_sizing import bytes_per_block_by_stage, size_pool, to_kv_groups

POOL_OF_KIND = {
    CacheKind.FULL: "global",
    CacheKind.SLIDING: "local",
    CacheKind.CHUNKED: "local",
    CacheKind.RECURRENT: "recurrent",
}
def hkv_state_blocks(spec: StateCacheSpec) -> int:
    """One live state per request; checkpoints live in cached-free blocks."""
    return 1


def state_page_layers(entries: list[tuple[CacheLayer, LayerCacheSpec]],
                      state_block_size: int) -> list[PagedLayer]:
    """Recurrent layers with their natural page: one state, no padding to attention pages."""
    return [PagedLayer(layer.name, layer.layer_idx, spec, state_block_size, spec.state_bytes)
            for layer, spec in entries if isinstance(spec, StateCacheSpec)]


def one_group_per_bucket(layers: list[PagedLayer]) -> list[list[PagedLayer]]:
    """One group per spec; layers of one type whose pages differ (MLA + DSA indexer) one group."""
    if uniform_type(layers):
        return [layers]
    return bucket_by_spec(unify_page_sizes(layers))


class _StagedPool(NamedTuple):
    pool_id: int
    kind: str
    groups: list[list[PagedLayer]]
    kv_groups: list[KVCacheGroup]
    bytes_per_block: int
    blocks_per_request: int  # at split_len

    @property
    def demand_bytes(self) -> int:
        return self.blocks_per_request * self.bytes_per_block


def build_split_pools(pool_groups: list[tuple[str, list[list[PagedLayer]]]], budget_bytes: int,
                      split_len: int, in_flight_tokens: int, num_hidden_layers: int,
                      pp: int, bound: BlockBound = BlockBound.VLLM,
                      min_state_requests: int = 0,
                      checkpoints_per_request: int = 0) -> tuple[list[KVCacheGroup], list[Pool]]:
    """Pools (in the given order) sharing `budget_bytes`, balanced at `split_len` tokens.
    A request's demand on a recurrent pool is its live states plus `checkpoints_per_request`
    cached checkpoints per recurrent group (what its prefix leaves for later hits).

    Every pool first gets its null block and the blocks of n requests of split_len tokens, n as
    large as the budget allows (the state pools: at least `min_state_requests` requests' states);
    the remainder goes to the attention pools in proportion to their demand (extra state blocks
    would only serve shorter requests than planned for).
    """
    staged = []
    for pool_id, (kind, groups) in enumerate(pool_groups):
        kv_groups = to_kv_groups(groups, pool_id, hkv_state_blocks, bound)
        bytes_per_block = max(bytes_per_block_by_stage(groups, num_hidden_layers, pp))
        blocks = sum(g.blocks_per_request(split_len, in_flight_tokens) for g in kv_groups)
        if kind == "recurrent":
            blocks += checkpoints_per_request * len(kv_groups)
        staged.append(_StagedPool(pool_id, kind, groups, kv_groups, bytes_per_block, blocks))
    null_bytes = sum(p.bytes_per_block for p in staged)
    demand = sum(p.demand_bytes for p in staged)
    num_requests = max(0, budget_bytes - null_bytes) // demand if demand else 0
    # Even when no request of split_len fits, keep one request's state blocks so that shorter
    # requests can run (the attention pools then set the longest length that fits).
    if num_requests == 0 and budget_bytes >= null_bytes + sum(
            p.demand_bytes for p in staged if p.kind == "recurrent"):
        num_requests = 1
    if budget_bytes < null_bytes:
        # Not even every pool's null block fits: no pool gets a block (capacity 0), as vLLM's one
        # pool gets none below one block; handing out null blocks first would spend memory the
        # budget does not have.
        shares = [0] * len(staged)
    else:
        shares = _shares(staged, budget_bytes, null_bytes, num_requests, min_state_requests)
    all_groups: list[KVCacheGroup] = []
    pools: list[Pool] = []
    for p, share in zip(staged, shares):
        pools.append(size_pool(p.pool_id, p.kind, p.groups, share, num_hidden_layers, pp))
        all_groups.extend(p.kv_groups)
    return all_groups, pools


def _shares(staged: list[_StagedPool], budget_bytes: int, null_bytes: int, num_requests: int,
            min_state_requests: int = 0) -> list[int]:
    """Bytes per pool: its null block and num_requests requests' blocks (state pools: at least
    min_state_requests), then the remainder to the attention pools in proportion to their demand.
    Requires budget_bytes >= null_bytes."""
    def requests(p: _StagedPool) -> int:
        return max(num_requests, min_state_requests) if p.kind == "recurrent" else num_requests
    state_bytes = sum(min(requests(p) * p.demand_bytes, budget_bytes - null_bytes)
                      for p in staged if p.kind == "recurrent")
    room = budget_bytes - null_bytes
    shares = [(min(requests(p) * p.demand_bytes, room if p.kind == "recurrent" else max(0, room - state_bytes))
               // p.bytes_per_block + 1) * p.bytes_per_block for p in staged]
    leftover = budget_bytes - sum(shares)
    growable = [i for i, p in enumerate(staged) if p.kind != "recurrent"] or list(range(len(staged)))
    growable_demand = sum(staged[i].demand_bytes for i in growable)
    for i in growable:
        shares[i] += leftover * staged[i].demand_bytes // growable_demand if growable_demand else 0
    return shares
