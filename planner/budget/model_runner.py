"""Which vLLM model runner profiles a model: V1 (gpu_model_runner.py) or V2 (gpu/model_runner.py).

The two profile differently: V2's dummy sampler is greedy (sampler_peak.py) and, before 0.29,
its `profile_cudagraph_memory` returned 0, so no graph estimate was subtracted. V2 is the
default (config/vllm.py `use_v2_model_runner`) from 0.25 for dense models without recurrent
state (0.23-0.24: a short list of architectures, not modelled), from 0.32 for every model
(only features such as pipeline parallelism with async scheduling keep V1).
"""

from __future__ import annotations

from hkv.planner.engines.vllm.rules import VllmRules


def uses_v2_runner(rules: VllmRules, *, moe: bool, has_state: bool) -> bool:
    if rules.v2_model_runner == "all":
        return True
    return rules.v2_model_runner == "dense" and not moe and not has_state


def graph_estimate_applies(rules: VllmRules, *, v2_runner: bool, enforce_eager: bool) -> bool:
    """Whether the release subtracts a (non-zero) CUDA graph estimate from the KV budget."""
    if enforce_eager or not rules.subtracts_cudagraph_estimate:
        return False
    return rules.v2_estimates_cudagraphs or not v2_runner
