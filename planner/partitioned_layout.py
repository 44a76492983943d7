"""Separate pools per cache kind (global attention, sliding/chunked, recurrent state).

The split follows an expected average sequence length N (`--expected-avg-seq-len` or
EXPECTED_AVERAGE_SEQ_LENGTH); unset, N = max_model_len, the split at which requests of the
model's maximum length exhaust every pool at once. Within a pool each spec gets one group.
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.memory_budget import MemoryBudget
from hkv.planner.engines.vllm.layout import in_flight_tokens
from hkv.planner.errors import LayoutUnavailableError
from hkv.planner.layout import Layout
from hkv.planner.paged_layer import PagedLayer, attention_page_layers, owned_cache_layers
from hkv.planner.plan_config import PlanConfig
from hkv.planner.split_pools import POOL_OF_KIND, build_split_pools, one_group_per_bucket, state_page_layers

_POOL_ORDER = ("global", "local", "recurrent")


def split_len_of(cfg: PlanConfig, max_len: int) -> int:
    return cfg.expected_avg_seq_len or max_len


def build_partitioned_layout(model: ModelSpec, cfg: PlanConfig, budget: MemoryBudget) -> Layout:
    entries = owned_cache_layers(model, cfg.cache_options(model.dtype_bytes))
    max_len = cfg.max_model_len or model.max_model_len
    state_block_size = cfg.block_size if cfg.enable_prefix_caching is not False else max_len
    layers = attention_page_layers(entries, cfg.block_size) + state_page_layers(entries, state_block_size)
    if any(layer.kind is CacheKind.CIRCULAR for layer in layers):
        raise LayoutUnavailableError(
            "Step5's sparse layers keep their K/V page, 8-token summaries and CSA tail ring side by side in one "
            "block (vLLM's block-outermost packing); pools of one page size per kind cannot hold that, so hkv "
            "plans Step5 with the vllm and hkv layouts only", fields=("layout",))
    by_pool: dict[str, list[PagedLayer]] = {}
    for layer in layers:
        by_pool.setdefault(POOL_OF_KIND[layer.kind], []).append(layer)
    pool_groups = [(kind, one_group_per_bucket(by_pool[kind])) for kind in _POOL_ORDER if kind in by_pool]
    t = in_flight_tokens(cfg, budget.max_num_batched_tokens)
    split_len = split_len_of(cfg, max_len)
    groups, pools = build_split_pools(pool_groups, budget.available_bytes, split_len, t,
                                      model.num_hidden_layers, cfg.pp)
    notes = (f"pools split for requests of {split_len:,} tokens "
             f"({'expected average' if cfg.expected_avg_seq_len else 'max_model_len'})",)
    return Layout("partitioned", tuple(groups), tuple(pools), max_len, t, budget.available_bytes, notes,
                  pp_size=cfg.pp)
