"""vLLM 0.33's prefill checkpoints of Qwen gated-delta-net layers: where they apply and what they cost.

From 0.33.0 `QwenGatedDeltaNetAttention` (model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py
~l.689-750) exports mid-prefill states when prefix caching runs Mamba layers in 'align' mode and
its prefill kernel is FlashInfer's, so an align checkpoint needs no split prefill. Two things follow:

- its MambaSpec gets `num_prefill_checkpoint_blocks=1`: a request holds 2 live states + 1
  checkpoint (+ 1 per speculative token) per recurrent group, as Mamba2 layers do from 0.32;
- `Platform._align_hybrid_block_size` (platforms/interface.py ~l.1089) makes the attention block,
  which the Mamba block follows in align mode, a multiple of the layers' checkpoint alignment,
  FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64 (v1/attention/backends/gdn_attn.py l.34).

Only when every Mamba layer of the model declares an alignment
(`get_mamba_prefill_checkpoint_alignment`, layers/mamba/abstract.py), so a model of Qwen GDN
layers only. FlashInfer's GDN prefill is picked (`_resolve_gdn_prefill_backend`, default "auto") on
CUDA at compute capability 9.0, and at 10.x / 12.x when head_k_dim is 128 and the CUDA runtime is
13 or newer: the 0.33.0 wheel links libcudart.so.13, so the runtime condition holds. OLMo hybrid's
GDN layers always run FLA's Triton kernels and export nothing. Not modelled: the checkpoint
workspace (cdiv(max_num_batched_tokens, block) x v_heads/TP x head_v_dim x head_k_dim fp32, 30 MiB
for Qwen3-Next at 8,192 tokens), which lies inside the non-torch band.
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import StateCacheSpec
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.plan_config import PlanConfig

FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64
# Families whose vLLM model class builds QwenGatedDeltaNetAttention (qwen3_next.py, qwen3_5.py,
# models/qwen4_exp).
QWEN_GDN_FAMILIES = frozenset({"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "qwen4_exp_text"})
FLASHINFER_GDN_HEAD_K_DIM = 128  # Blackwell's FlashInfer GDN prefill kernel takes this head_k_dim only


def flashinfer_gdn_prefill(capability: tuple[int, int] | None, head_k_dim: int) -> bool:
    """Whether vLLM 0.33 runs GDN prefill on FlashInfer's kernel on a CUDA GPU of `capability`
    (None: no CUDA GPU named, or vLLM's CPU platform)."""
    if capability is None:
        return False
    if capability == (9, 0):
        return True
    return capability[0] in (10, 12) and head_k_dim == FLASHINFER_GDN_HEAD_K_DIM


def gdn_checkpoint_alignment(model: ModelSpec, cfg: PlanConfig, prefix_caching: bool) -> int | None:
    """The token alignment of the prefill checkpoints `model`'s recurrent layers export under `cfg`
    (64), or None where they export none: before 0.33, without prefix caching, for other mixers,
    or where GDN prefill runs on FLA's Triton kernels."""
    if not (cfg.vllm_rules().gdn_prefill_checkpoints and prefix_caching and model.family in QWEN_GDN_FAMILIES):
        return None
    opts = cfg.cache_options(model.dtype_bytes)
    states = [s for _, s in model.cache_specs(opts) if isinstance(s, StateCacheSpec)]
    if not states or any(s.variant != "gdn" for s in states):
        return None
    capability = None if cfg.gpu is None or cfg.cpu_engine else get_gpu(cfg.gpu).compute_capability
    head_k_dim = states[0].shapes[-1][1]  # the ssm state is (v_heads / TP, head_k_dim, head_v_dim)
    return FLASHINFER_GDN_CHECKPOINT_ALIGNMENT if flashinfer_gdn_prefill(capability, head_k_dim) else None
