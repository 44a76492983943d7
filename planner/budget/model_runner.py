"""Which vLLM model runner profiles a model: V1 (gpu_model_runner.py) or V2 (gpu/model_runner.py).

The two profile differently: V2's dummy sampler is greedy (sampler_peak.py) and, before 0.29,
its `profile_cudagraph_memory` returned 0 (gpu/model_runner.py, 0.25-0.28), so no graph estimate
was subtracted. V2 is the default (config/vllm.py `use_v2_model_runner`):
- 0.25-0.28 (`_is_default_v2_model_runner_model`): generate models that are neither hybrid nor
  attention-free, and not MoE unless listed in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
  (DeepseekV2, Qwen2Moe, GraniteMoe; 0.26 adds Inkling and LongcatFlashNgram, 0.27 KimiK3 and
  lets a listed hybrid in). The list is not modelled: a listed MoE is taken for V1 here.
  Quantization plays no part (an AWQ Qwen2 runs on V2, as log q004 on 0.26.0 shows: its
  KV budget 8.00 = 14.39 requested - 5.29 weights - 1.04 activation - 0.06 non-torch, the
  0.48 GiB of graphs it also prints being the capture after the KV cache, not an estimate).
- from 0.29: every model on CUDA (the architecture test is gone; only unsupported features,
  missing Triton, or ROCm's V1 list keep V1). 0.23-0.24: a short list, not modelled.
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
