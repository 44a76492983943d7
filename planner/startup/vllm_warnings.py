"""What vLLM lets start but the user should know: prefix caching off, the prompt length below
which a cached prefix never hits, and the CUDA graph estimate's share of the KV memory.

Sources: prefix caching's default per release is VllmRules.prefix_caching (rules.py); a hit
needs a full block before the prompt's last token (vllm/v1/core/kv_cache_manager.py
get_computed_blocks: max_cache_hit_length = request.num_tokens - 1; 0.33.0 l.302); the attention
block is raised to cover one Mamba state page (the "Setting attention block size" note of the
vllm layout); the graph line is vllm/v1/worker/gpu_worker.py determine_available_memory (0.20.0
l.456, 0.32.0 l.775, 0.33.0 l.788), printed whenever the estimate is subtracted.
"""

from __future__ import annotations

from collections.abc import Callable

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.engines.vllm.layout import vllm_prefix_caching
from hkv.planner.plan import Plan
from hkv.planner.sizes import format_gib
from hkv.planner.startup.issue import StartupIssue
from hkv.planner.startup.release_range import ReleaseRange
from hkv.planner.startup.vllm_kv_need import VllmKvNeed

CUDAGRAPH_SHARE_FLAGGED = 0.15  # flag a graph estimate that takes this share of the KV memory or more
HYBRID_PREFIX_OFF = ReleaseRange("vLLM", (0, 10, 0), (0, 25, 0))  # on by default from 0.26.0
STATE_ONLY_PREFIX_OFF = ReleaseRange("vLLM", (0, 10, 0))  # still off in 0.33.0
ALIGNED_BLOCK = ReleaseRange("vLLM", (0, 10, 0))  # attention blocks aligned to the Mamba page
GRAPH_ESTIMATE_LINE = ReleaseRange("vLLM", (0, 20, 0))
GRAPH_TEXT = ("CUDA graph memory profiling is enabled (default since v0.21.0). The current "
              "--gpu-memory-utilization={current:.4f} is equivalent to --gpu-memory-utilization={equivalent:.4f} "
              "without CUDA graph memory profiling. To maintain the same effective KV cache size as before, increase "
              "--gpu-memory-utilization to {suggested:.4f}. To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.")


def prefix_caching_off(plan: Plan, need: VllmKvNeed) -> StartupIssue | None:
    """The release's default leaves prefix caching off for this model (not the user's choice)."""
    cfg = plan.config
    if cfg.enable_prefix_caching is not None or vllm_prefix_caching(plan.model, cfg):
        return None
    kinds = {g.kind for g in need.layout.groups}
    state_only = kinds == {CacheKind.RECURRENT}
    rules = cfg.vllm_rules()
    what = "state-space models" if state_only else "hybrid models with state-space layers"
    return StartupIssue(
        "prefix_caching_off",
        f"prefix caching is off: vLLM {rules.name} does not cache prefixes of {what} by default",
        None if state_only else "--enable-prefix-caching",
        (STATE_ONLY_PREFIX_OFF if state_only else HYBRID_PREFIX_OFF).text,
        detail="a repeated prompt prefix (system prompt, chat history) is computed again for every request")


def shortest_hitting_prompt(plan: Plan, need: VllmKvNeed) -> StartupIssue | None:
    """Under prefix caching with the attention block raised to a Mamba page, only prompts longer
    than one such block can reuse a cached one."""
    if not vllm_prefix_caching(plan.model, plan.config) or plan.block is None:
        return None
    layout = need.layout
    attention = [g.block_size for g in layout.groups if g.kind is not CacheKind.RECURRENT]
    if not attention or not any(g.kind is CacheKind.RECURRENT for g in layout.groups):
        return None
    block = min(attention)
    if block <= plan.block.block_size:
        return None
    return StartupIssue(
        "prefix_cache_block",
        f"Setting attention block size to {block} tokens to ensure that attention page size is >= mamba page size.",
        None, ALIGNED_BLOCK.text,
        detail=f"prefix-cache hits come in whole {block:,}-token blocks (the backend's {plan.block.block_size}): "
               f"a prompt of fewer than {block + 1:,} tokens never reuses a cached block (vLLM recomputes the "
               f"last prompt token), and a longer one reuses only its full blocks")


def cudagraph_share(plan: Plan, need: VllmKvNeed) -> StartupIssue | None:
    """The graph estimate comes out of the KV memory (0.20.0+) and takes a large share of it."""
    cfg, budget = plan.config, plan.budget
    rules = cfg.vllm_rules()
    graphs = budget.cudagraph_bytes
    if not rules.subtracts_cudagraph_estimate or cfg.enforce_eager or graphs <= 0 or budget.total_bytes <= 0:
        return None
    share = graphs / (budget.available_bytes + graphs)
    if share < CUDAGRAPH_SHARE_FLAGGED:
        return None
    current = budget.gpu_memory_utilization
    delta = graphs / budget.total_bytes
    suggested = min(round(current + delta, 4), 1.0)
    message = GRAPH_TEXT.format(current=current, equivalent=round(current - delta, 4), suggested=suggested)
    fix = (f"--gpu-memory-utilization >= {suggested:.4f} or " if suggested < 1.0 else "") + "--enforce-eager"
    return StartupIssue(
        "cudagraph_share", message, fix, GRAPH_ESTIMATE_LINE.text,
        detail=f"the CUDA graph estimate ({format_gib(graphs)}, hkv's) takes {share:.0%} of the memory left for "
               f"the KV cache; --enforce-eager gives it back at the cost of slower decoding")


VllmWarning = Callable[[Plan, VllmKvNeed], StartupIssue | None]
WARNINGS: tuple[VllmWarning, ...] = (prefix_caching_off, shortest_hitting_prompt, cudagraph_share)
