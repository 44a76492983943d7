"""Environment variables `vllm serve` needs to realize a plan's vllm layout, each with its reason.

Names and defaults read from vLLM 0.32's vllm/envs.py and vllm/config/vllm.py (0.33's are the same):
VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is read as bool(int(value)), default "1" (its
default was 0 in 0.10.1-0.13, see VllmRules.chunked_disables_hybrid_manager); when it is 0 a model
with chunked local attention loses the hybrid KV cache manager. VLLM_ALLOW_LONG_MAX_MODEL_LEN
("1"/"true", default "0") lets max_model_len pass the model's positions.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.plan import Plan

CHUNKED_HYBRID_ENV = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"
VLLM_ALLOW_LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


@dataclass(frozen=True)
class EnvSetting:
    name: str
    value: str
    why: str  # one line: what goes wrong without it


def serve_env(plan: Plan) -> tuple[EnvSetting, ...]:
    """The variables, in a fixed order: the chunked-local switch pinned to what the vllm layout
    planned (not for EAGLE drafts: vLLM then turns the manager off whatever it says), then the
    long-context permission when max_model_len passes the model's positions."""
    model, cfg = plan.model, plan.config
    settings = []
    specs = model.cache_specs(cfg.cache_options(model.dtype_bytes), engine_windows=True)
    if any(spec is not None and spec.kind is CacheKind.CHUNKED for _, spec in specs) and not cfg.draft_layers:
        rules = cfg.vllm_rules()
        if rules.chunked_disables_hybrid_manager:
            settings.append(EnvSetting(CHUNKED_HYBRID_ENV, "0", (
                f"vLLM {rules.name} turns the hybrid KV cache manager off for chunked local attention, as "
                f"the vllm layout plans (chunked layers cached as full attention); 1 would turn it on")))
        else:
            settings.append(EnvSetting(CHUNKED_HYBRID_ENV, "1", (
                "the vllm layout keeps the hybrid KV cache manager for the chunked local attention layers; "
                "with 0 vLLM turns it off and caches them as full attention (the vllm-no-hybrid layout)")))
    if cfg.max_model_len is not None and cfg.max_model_len > model.max_model_len:
        settings.append(EnvSetting(VLLM_ALLOW_LONG_ENV, "1", (
            f"max_model_len {cfg.max_model_len:,} passes the {model.max_model_len:,} positions of "
            f"{model.name}; vLLM refuses it otherwise")))
    return tuple(settings)
