"""hkv's own layout: vLLM's single shared pool, with changes that only ever remove waste.

1. No padding slots where a grouping without them exists. vLLM's groups all have as many layer
   slots as the largest group; a group with fewer layers pads the difference in every block it
   holds (Gemma-3-27B: 52 sliding layers in groups of 10 leave 8 slots empty). hkv tries every
   group size g (strided split as vLLM) and keeps the one with the fewest bytes per request of
   max_model_len tokens (ties: fewer groups). A g dividing every kind's layer count (the gcd)
   has no padding at all and so the fewest bytes under any weighting of the kinds: the worst
   case of the logged figure and the steady state of the sustained one alike. It may mean more
   groups than vLLM (Gemma-3-27B: 31 of 2 layers instead of 7 of 10): a block id costs 4 bytes
   of block table against a page of tens of KiB, and per-group work is per step, not per token.
   vLLM's own g is a candidate, so hkv never needs more bytes per request than vLLM.
2. Exact per-request bounds (BlockBound.EXACT): a sliding request is never charged more blocks
   than its sequence has (vLLM charges cdiv(L, b) + 1 once W - 1 + T >= L, more than full
   attention), and T is one step's token budget per pipeline stage: hkv's scheduler is
   synchronous, so a request never has more than one step's tokens scheduled beyond what it has
   computed (vLLM keeps pp + 1 batches in flight for async scheduling).
3. Recurrent state in its own pool of state-sized blocks. vLLM pads each Mamba state into an
   attention page and so raises the attention block to hundreds of tokens (528 for Granite-4),
   which makes prefix hits coarse and rounds every request up; it also holds 3 state blocks per
   request. hkv keeps the attention block at --block-size, gives each recurrent spec one group
   whose block is one request's states for all its layers (no padding), holds one live state per
   request (checkpoints live in cached-free blocks), and splits the budget between the two
   pools so both admit the same number of requests at max_model_len (or at the expected average
   length when given).
"""

from __future__ import annotations

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.layout import BlockBound, KVCacheGroup, Layout
from hkv.planner.memory_budget import MemoryBudget
from hkv.planner.paged_layer import (
    PagedLayer, attention_page_layers, bucket_by_spec, owned_cache_layers, split_strided,
    unify_page_sizes,
)
from hkv.planner.plan_config import PlanConfig
from hkv.planner.pool_sizing import size_pool, to_kv_groups
from hkv.planner.split_pools import build_split_pools, one_group_per_bucket, state_page_layers


def hkv_in_flight_tokens(cfg: PlanConfig, max_num_batched_tokens: int) -> int:
    """T of hkv's synchronous scheduler: one step's token budget per pipeline stage."""
    return cfg.pp * max_num_batched_tokens


def choose_groups(layers: list[PagedLayer], seq_len: int, t: int) -> list[list[PagedLayer]]:
    """Group size with the fewest bytes per request at seq_len under BlockBound.EXACT (ties:
    fewer groups)."""
    buckets = bucket_by_spec(unify_page_sizes(layers))
    if len(buckets) <= 1:
        return buckets
    page = buckets[0][0].page_size_bytes

    def cost(group_size: int) -> tuple[tuple[int, int], list[list[PagedLayer]]]:
        groups = [g for b in buckets for g in split_strided(b, group_size)]
        slots = max(len(g) for g in groups)
        kv_groups = to_kv_groups(groups, 0, bound=BlockBound.EXACT)
        blocks = sum(g.blocks_per_request(seq_len, t) for g in kv_groups)
        return (blocks * slots * page, len(groups)), groups

    return min((cost(g) for g in range(1, max(len(b) for b in buckets) + 1)), key=lambda c: c[0])[1]


def build_hkv_layout(model: ModelSpec, cfg: PlanConfig, budget: MemoryBudget) -> Layout:
    entries = owned_cache_layers(model, cfg.cache_options(model.dtype_bytes))
    max_len = cfg.max_model_len or model.max_model_len
    t = hkv_in_flight_tokens(cfg, budget.max_num_batched_tokens)
    attention = attention_page_layers(entries, cfg.block_size)
    state_block_size = cfg.block_size if cfg.enable_prefix_caching else max_len
    states = state_page_layers(entries, state_block_size)
    attn_groups = choose_groups(attention, max_len, t) if attention else []
    notes = []
    if not states:
        pool = size_pool(0, "shared", attn_groups, budget.available_bytes, model.num_hidden_layers, cfg.pp)
        groups: list[KVCacheGroup] = to_kv_groups(attn_groups, 0, bound=BlockBound.EXACT)
        return Layout("hkv", tuple(groups), (pool,) if groups else (), max_len, t,
                      budget.available_bytes, (), pp_size=cfg.pp)
    split_len = cfg.expected_avg_seq_len or max_len
    pool_groups = ([("attention", attn_groups)] if attn_groups else []) + [
        ("recurrent", one_group_per_bucket(states))]
    groups, pools = build_split_pools(pool_groups, budget.available_bytes, split_len, t,
                                      model.num_hidden_layers, cfg.pp, BlockBound.EXACT)
    notes.append(f"state pool sized for requests of {split_len:,} tokens")
    return Layout("hkv", tuple(groups), tuple(pools), max_len, t, budget.available_bytes, tuple(notes), pp_size=cfg.pp)
