"""EngineSummary: one engine's answer to "how many of my requests fit", in figures both engines have,
so `hkv plan --engine vllm,sglang` can set them side by side.

The engines count differently and the summary keeps each one's own meaning: `kv_cache_tokens` is
vLLM's "GPU KV cache size" (for hybrid models int(concurrency x max_model_len) since 0.20.1, so
sliding layers included) and SGLang's full-attention pool (`max_total_num_tokens`); SGLang alone
has a separate sliding-window pool (`swa_tokens`) and recurrent-state slots (`state_slots`).
`logged_capacity` is each engine's own capacity line as hkv predicts it. `max_running_requests` is
vLLM's max_num_seqs and SGLang's resolved max_running_requests. `fit_at_once` is max-length requests
whose KV cache the pools hold together (vLLM's blocks; SGLang's full pool // context_len within
max_running_requests, whose cap already counts state slots; None for SGLang's sliding-window
pool, whose per-request share depends on its eviction). `sustained_concurrency` is max-length
requests that run at once without a preemption, None where hkv does not predict it (SGLang).
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hkv.planner.engines.sglang.plan import SglangPlan
from hkv.planner.plan import Plan


@dataclass(frozen=True)
class EngineSummary:
    engine: str  # "vllm", "sglang"
    version: str  # the release the figures follow
    fits: bool  # the weights fit and one max-length request fits
    available_kv_bytes: int  # the memory the engine sizes its KV pools from
    max_model_len: int  # vLLM's max_model_len, SGLang's context_len
    kv_cache_tokens: int
    swa_tokens: int | None
    state_slots: int | None
    max_running_requests: int
    fit_at_once: int | None
    sustained_concurrency: int | None
    logged_capacity: tuple[str, ...]  # the capacity line(s) the engine prints, as hkv predicts them

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "logged_capacity": list(self.logged_capacity)}


def vllm_summary(plan: Plan) -> EngineSummary:
    """The plan's `vllm` layout (KeyError-free: a plan always holds it unless vLLM cannot serve the
    model, which plan() raises for)."""
    report = plan.reports["vllm"]
    capacity = report.capacity
    return EngineSummary(
        engine="vllm", version=plan.config.vllm_rules().name,
        fits=plan.budget.fits and capacity.max_num_requests > 0,
        available_kv_bytes=plan.budget.available_bytes, max_model_len=capacity.max_model_len,
        kv_cache_tokens=capacity.kv_cache_tokens, swa_tokens=None, state_slots=None,
        max_running_requests=plan.budget.max_num_seqs,
        fit_at_once=min(capacity.max_num_requests, plan.budget.max_num_seqs),
        sustained_concurrency=capacity.sustained_concurrency,
        logged_capacity=report.log_lines)


def sglang_summary(planned: SglangPlan) -> EngineSummary:
    """SGLang's pools; no sustained figure (hkv does not simulate SGLang's scheduler)."""
    pools = planned.pools
    return EngineSummary(
        engine="sglang", version=planned.resolution.rules.version_text,
        fits=pools.max_total_num_tokens >= pools.context_len and pools.max_running_requests > 0,
        available_kv_bytes=pools.available_bytes, max_model_len=pools.context_len,
        kv_cache_tokens=pools.max_total_num_tokens, swa_tokens=pools.swa_tokens,
        state_slots=pools.max_mamba_cache_size, max_running_requests=pools.max_running_requests,
        fit_at_once=None if pools.swa_tokens is not None else planned.max_length_requests,
        sustained_concurrency=None, logged_capacity=planned.start_up_lines())


def not_fitting_summary(engine: str, version: str, max_model_len: int) -> EngineSummary:
    """An engine that would refuse to start (the reason goes beside the table)."""
    return EngineSummary(engine=engine, version=version, fits=False, available_kv_bytes=0,
                         max_model_len=max_model_len, kv_cache_tokens=0, swa_tokens=None, state_slots=None,
                         max_running_requests=0, fit_at_once=0, sustained_concurrency=None, logged_capacity=())
