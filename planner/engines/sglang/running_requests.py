"""SGLang's max_running_requests (kv_cache_configurator.py resolve_max_num_reqs).

estimate = clamp(int(tokens / context_len x 512), 2048, 4096); then
  not given  min(estimate, tokens // 2)
  given R    min(max(1, R), tokens // 2) from 0.5.14, min(R, estimate) before
and for hybrid recurrent models at most max_mamba_cache_size // slots per request.
`tokens` is the full pool (max_total_num_tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.errors import DoesNotFitError

ESTIMATE_REQUESTS_PER_CONTEXT = 512
ESTIMATE_MIN, ESTIMATE_MAX = 2048, 4096


@dataclass(frozen=True)
class RunningRequests:
    """The resolved cap, and which limit set it."""

    max_running_requests: int
    capped_by_mamba: bool  # the state pool set it (SGLang warns "capped to N by the mamba state cache")
    reduced_from: int | None  # the requested value when the KV pool lowered it, else None


def running_requests(tokens: int, context_len: int, requested: int | None, *, token_cap: bool,
                     mamba_cap: int | None) -> RunningRequests:
    estimate = max(min(int(tokens / context_len * ESTIMATE_REQUESTS_PER_CONTEXT), ESTIMATE_MAX), ESTIMATE_MIN)
    if requested is None:
        cap = min(estimate, tokens // 2)
    elif token_cap:
        cap = min(max(1, requested), tokens // 2)
    else:
        cap = min(requested, estimate)
    capped_by_mamba = mamba_cap is not None and mamba_cap < cap
    if mamba_cap is not None:
        cap = min(cap, mamba_cap)
    if cap <= 0:
        raise DoesNotFitError(
            f"SGLang would serve no request: {tokens:,} KV tokens"
            + (f", {mamba_cap} requests' recurrent states" if mamba_cap is not None else "")
            + "; raise --mem-fraction-static or use more GPUs", fields=("mem_fraction_static", "tp"))
    reduced = requested if requested is not None and cap < requested and not capped_by_mamba else None
    return RunningRequests(cap, capped_by_mamba, reduced)
