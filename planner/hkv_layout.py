"""hkv's own layout: vLLM's single shared pool, with changes that only ever remove waste.

1. A prefill chunk per request (`hkv_prefill_chunk_len`, default 2,048 tokens) and synchronous
   scheduling, so T, the tokens a request may have in flight, is min(that, the step's budget)
   where vLLM's is 2 x the budget. A sliding or chunked layer holds at most its window (chunk)
   plus T, so on Gemma-3 at 8k a sliding group is charged 193 blocks instead of vLLM's 513 (one
   more than full attention's 512, which makes vLLM's hybrid layout lose to
   --disable-hybrid-kv-cache-manager there). The step's budget is still filled, by several
   requests' chunks; the runtime's Scheduler enforces the cap.
2. Exact per-request bounds (BlockBound.EXACT): a sliding request is never charged more blocks
   than the cdiv(L, b) its sequence has.
3. Group size chosen for the workload, not by the min-count rule. vLLM's groups all have as many
   layer slots as the largest group; a group with fewer layers pads the difference in every block
   it holds (Gemma-3-27B: 52 sliding layers in groups of 10 leave 8 slots empty). hkv tries every
   group size g (strided split as vLLM) and keeps the one with the fewest bytes per request of
   max_model_len tokens, among those needing at most MAX_BLOCK_IDS_RATIO x vLLM's block ids per
   request (ids are allocator work per step). vLLM's own g is a candidate, so hkv never needs
   more bytes per request than vLLM at the same block size.
4. Recurrent state in its own pool of state-sized blocks. vLLM pads each Mamba state into an
   attention page and so raises the attention block to hundreds of tokens (528 for Granite-4),
   which makes prefix hits coarse and rounds every request up; it also holds 3 state blocks per
   request. hkv keeps the attention block at --block-size, gives each recurrent spec one group
   whose block is one request's states for all its layers (no padding), holds one live state per
   request (checkpoints live in cached-free blocks), and splits the budget between the two
   pools so both admit the same number of requests at max_model_len (or at the expected average
   length when given: a workload's mean, planner/capacity/workload_lengths.py; the state pool then also
   keeps each request's checkpoints, see `checkpoints_per_request`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.block_stride import aligned_pool
from hkv.planner.budget.memory_budget import MemoryBudget
from hkv.planner.compressed_attention_layout import packed_paged_groups
from hkv.planner.engines.vllm.layout import vllm_group_size
from hkv.planner.layout import BlockBound, KVCacheGroup, Layout
from hkv.planner.paged_layer import (
    PagedLayer,
    attention_page_layers,
    bucket_by_spec,
    owned_cache_layers,
    split_strided,
    uniform_type,
    unify_page_sizes,
)
from hkv.planner.plan_config import PlanConfig
from hkv.planner.pool_sizing import size_pool, to_kv_groups
from hkv.planner.split_pools import build_split_pools, one_group_per_bucket, state_page_layers
from hkv.planner.step5_backend import check_step5_pages
from hkv.planner.capacity.sustained import SustainedSetup, predict_sustained

# Block ids per request allowed, relative to vLLM's grouping: each id is allocator work per step
# (allocation, release, hashing, eviction), so fewer, larger groups run faster. Without this cap
# Gemma-3-27B takes 31 groups of 2 (no padding) and `hkv simulate` runs 7.9x slower.
MAX_BLOCK_IDS_RATIO = 2


def hkv_in_flight_tokens(cfg: PlanConfig, max_num_batched_tokens: int) -> int:
    """T of hkv's scheduler: it is synchronous (a request is in one step at a time) and gives one
    request at most `hkv_prefill_chunk_len` prompt tokens per step, so no request ever has more
    than min(that, the step's budget) tokens in flight. The runtime's Scheduler enforces it."""
    return min(max_num_batched_tokens, cfg.hkv_prefill_chunk_len)


def choose_groups(layers: list[PagedLayer], seq_len: int, t: int) -> list[list[PagedLayer]]:
    """Group size with the fewest bytes per request at seq_len under BlockBound.EXACT (ties: fewer
    groups), among those needing at most MAX_BLOCK_IDS_RATIO x vLLM's block ids per request.
    Layers of one type (same block lifetime, pages that may differ: MLA + DSA indexer) stay one group,
    as in vLLM: splitting them could only add block ids."""
    packed = packed_paged_groups(layers)  # DeepSeek-V4: vLLM's packing, bounded exactly
    if packed is not None:
        return packed
    if uniform_type(layers):
        return [layers]
    buckets = bucket_by_spec(unify_page_sizes(layers))
    if len(buckets) <= 1:
        return buckets
    page = buckets[0][0].page_size_bytes

    def cost(group_size: int) -> tuple[int, int, list[list[PagedLayer]]]:
        groups = [g for b in buckets for g in split_strided(b, group_size)]
        slots = max(len(g) for g in groups)
        blocks = sum(g.blocks_per_request(seq_len, t) for g in to_kv_groups(groups, 0, bound=BlockBound.EXACT))
        return blocks * slots * page, blocks, groups

    _, baseline_ids, best_groups = cost(vllm_group_size([len(b) for b in buckets]))
    best_key: tuple[int, int] | None = None
    for group_size in range(1, max(len(b) for b in buckets) + 1):
        num_bytes, num_ids, groups = cost(group_size)
        if num_ids > MAX_BLOCK_IDS_RATIO * baseline_ids:
            continue
        key = (num_bytes, len(groups))
        if best_key is None or key < best_key:
            best_key, best_groups = key, groups
    return best_groups


def build_hkv_layout(model: ModelSpec, cfg: PlanConfig, budget: MemoryBudget) -> Layout:
    entries = owned_cache_layers(model, cfg.cache_options(model.dtype_bytes))
    max_len = cfg.max_model_len or model.max_model_len
    t = hkv_in_flight_tokens(cfg, budget.max_num_batched_tokens)
    attention = attention_page_layers(entries, cfg.block_size)
    state_block_size = cfg.block_size if cfg.enable_prefix_caching is not False else max_len
    states = state_page_layers(entries, state_block_size)
    check_step5_pages(attention)
    attn_groups = choose_groups(attention, max_len, t) if attention else []
    notes: list[str] = []
    if not states:
        pool = size_pool(0, "shared", attn_groups, budget.available_bytes, model.num_hidden_layers, cfg.pp)
        pool = aligned_pool(pool, attn_groups, budget.available_bytes, model.num_hidden_layers, cfg.pp)
        groups: list[KVCacheGroup] = to_kv_groups(attn_groups, 0, bound=BlockBound.EXACT)
        return Layout("hkv", tuple(groups), (pool,) if groups else (), max_len, t,
                      budget.available_bytes, (), pp_size=cfg.pp)
    split_len = cfg.expected_avg_seq_len or max_len
    checkpoints = 0
    if cfg.expected_avg_seq_len and cfg.enable_prefix_caching is not False:
        checkpoints = checkpoints_per_request(split_len, checkpoint_grid_len(budget.max_num_batched_tokens,
                                                                             state_block_size))
    pool_groups = ([("attention", attn_groups)] if attn_groups else []) + [
        ("recurrent", one_group_per_bucket(states))]
    def layout_with(min_states: int) -> Layout:
        groups, pools = build_split_pools(pool_groups, budget.available_bytes, split_len, t, model.num_hidden_layers,
                                          cfg.pp, BlockBound.EXACT, min_state_requests=min_states,
                                          checkpoints_per_request=checkpoints)
        return Layout("hkv", tuple(groups), tuple(pools), max_len, t, budget.available_bytes,
                      tuple(notes), pp_size=cfg.pp)

    notes.append(f"state pool sized for requests of {split_len:,} tokens"
                 + (f", each with {checkpoints} cached checkpoint(s)" if checkpoints else ""))
    if not cfg.expected_avg_seq_len:
        notes.append("state pool sized for max-length requests: it caps how many shorter requests "
                     "run at once; size it for a workload with expected_avg_seq_len "
                     "(hkv simulate sizes it from the trace it replays)")
    balanced = layout_with(0)
    return _with_sustained_states(balanced, layout_with, SustainedSetup(
        budget.max_num_batched_tokens, budget.max_num_seqs, cfg.output_len), max_len)


def checkpoint_grid_len(max_num_batched_tokens: int, state_block_size: int) -> int:
    """Tokens between the recurrent checkpoints hkv's scheduler keeps (besides hit points): one
    step's token budget, so a hit that falls between two checkpoints recomputes at most one step
    of prefill. The runtime's Scheduler uses the same grid."""
    return max(state_block_size, max_num_batched_tokens // state_block_size * state_block_size)


def checkpoints_per_request(seq_len: int, grid_len: int) -> int:
    """Checkpoints a request of seq_len tokens leaves in the state pool for later hits: one per
    grid_len tokens of its prefix, plus one at its hit point (prompt end or junction). A cached
    attention prefix is worth a hit only with its checkpoint, so the state pool keeps as many
    requests' checkpoints as the attention pool keeps their prefixes: both age out together."""
    return seq_len // grid_len + 1


# The most logged concurrency the state pool may give up for more sustained requests (a share).
STATE_HEADROOM_LOGGED_COST = 1e-3


def _with_sustained_states(balanced: Layout, layout_with: Callable[[int], Layout], setup: SustainedSetup,
                           max_len: int) -> Layout:
    """`balanced` (pools that run out together at the split length), or one whose state pool holds
    the states of every request the attention pool sustains, when that raises the sustained figure
    for at most a 0.1 % lower logged concurrency.

    Why: requests under way are shorter than max_model_len, so the attention pool sustains more of
    them than the split counts; states are then the limit. vLLM's one shared pool trades the two
    freely (LFM2-1.2B at 32k: 181 sustained against 180 with balanced pools).
    """
    try:
        sustained = predict_sustained(balanced, setup)
        probe = predict_sustained(layout_with(setup.max_num_seqs), setup)
    except ValueError:
        return balanced
    if probe <= sustained:
        return balanced
    candidate = layout_with(probe)
    logged_before, logged_after = balanced.max_concurrency(max_len), candidate.max_concurrency(max_len)
    if (predict_sustained(candidate, setup) > sustained
            and logged_after >= logged_before * (1 - STATE_HEADROOM_LOGGED_COST)):
        return replace(candidate, notes=candidate.notes + (
            f"state pool holds {probe} requests' states: the attention pool sustains that many",))
    return balanced
