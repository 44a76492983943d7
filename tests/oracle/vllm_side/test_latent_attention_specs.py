"""KV page of latent-attention families (a config with kv_lora_rank) from vLLM's own attention modules.

For each case a small config is handed to the attention class vLLM 0.32's decoder layer would build
for it, constructed on CPU at TP 1 (gloo), and the module's `get_kv_cache_spec` is compared with
hkv's AttentionCacheSpec of the same config dict: bytes per token, KV heads, K and V head sizes,
and MLA or not. Which class the layer builds follows the model file: MiniCPM3 always plain
`Attention` over per-head K/V; SarvamMLAForCausalLM always MultiHeadLatentAttention; AXK1 and
DeepseekV3ForCausalLM pick the MLA class only when `ModelConfig.use_mla`, i.e. when vLLM's own
`ModelArchConfigConvertor.is_deepseek_mla` lists the model_type (it lists axk1, not sarvam_mla).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from transformers import PretrainedConfig
from vllm.config import VllmConfig
from vllm.v1.kv_cache_interface import MLAAttentionSpec

from attention_module_spec import module_kv_spec
from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec
from hkv.model_specs.from_hf_config import from_hf_config

BLOCK = 16
LATENT = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=16, qk_rope_head_dim=8,
              qk_nope_head_dim=16, v_head_dim=12, num_hidden_layers=1, vocab_size=128, intermediate_size=64,
              rms_norm_eps=1e-6, max_position_embeddings=4096, torch_dtype="bfloat16",
              rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
              # MoE keys hkv's parameter count reads (the attention modules ignore them)
              n_routed_experts=4, n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1,
              num_experts_per_tok=2)


def _latent_kwargs(vc: VllmConfig, hf, prefix: str) -> dict:
    return dict(vllm_config=vc, config=hf, hidden_size=hf.hidden_size, num_heads=hf.num_attention_heads,
                qk_nope_head_dim=hf.qk_nope_head_dim, qk_rope_head_dim=hf.qk_rope_head_dim,
                v_head_dim=hf.v_head_dim, q_lora_rank=hf.q_lora_rank, kv_lora_rank=hf.kv_lora_rank,
                max_position_embeddings=hf.max_position_embeddings, cache_config=vc.cache_config, prefix=prefix)


def _minicpm3(vc: VllmConfig, hf, prefix: str, use_mla: bool):
    from vllm.model_executor.models.minicpm3 import MiniCPM3Attention
    kwargs = _latent_kwargs(vc, hf, prefix)
    del kwargs["vllm_config"]
    return MiniCPM3Attention(**kwargs)


def _sarvam(vc: VllmConfig, hf, prefix: str, use_mla: bool):
    from vllm.model_executor.models.sarvam import SarvamMLAAttention
    return SarvamMLAAttention(vllm_config=vc, config=hf, cache_config=vc.cache_config, prefix=prefix)


def _axk1(vc: VllmConfig, hf, prefix: str, use_mla: bool):
    from vllm.model_executor.models.AXK1 import AXK1Attention, AXK1MLAAttention
    return (AXK1MLAAttention if use_mla else AXK1Attention)(**_latent_kwargs(vc, hf, prefix))


def _deepseek_v3(vc: VllmConfig, hf, prefix: str, use_mla: bool):
    from vllm.model_executor.models.deepseek_v2 import DeepseekV2Attention, DeepseekV2MLAAttention
    return (DeepseekV2MLAAttention if use_mla else DeepseekV2Attention)(**_latent_kwargs(vc, hf, prefix))


# case -> (model_type, architecture, q_lora_rank, builder of the attention module vLLM's layer uses)
CASES: dict[str, tuple[str, str, int | None, Callable]] = {
    "minicpm3": ("minicpm3", "MiniCPM3ForCausalLM", 24, _minicpm3),
    "sarvam_mla": ("sarvam_mla", "SarvamMLAForCausalLM", None, _sarvam),
    "sarvam_mla-as-DeepseekV3": ("sarvam_mla", "DeepseekV3ForCausalLM", None, _deepseek_v3),
    "axk1": ("axk1", "AXK1ForCausalLM", 24, _axk1),
}


def _vllm_spec(case: str, raw: dict, layer_idx: int):
    _, arch, _, build = CASES[case]
    hf = PretrainedConfig(**{k: v for k, v in raw.items() if k != "torch_dtype"})
    return module_kv_spec(build, hf, arch, f"model.layers.{layer_idx}.self_attn", block_size=BLOCK)


@pytest.mark.parametrize("case", sorted(CASES))
def test_latent_attention_page_equals_vllm(case: str, tp1_group: None) -> None:
    model_type, arch, q_lora_rank, _ = CASES[case]
    raw = {**LATENT, "model_type": model_type, "architectures": [arch], "q_lora_rank": q_lora_rank}
    theirs = _vllm_spec(case, raw, sorted(CASES).index(case))
    ours = next(s for _, s in from_hf_config(raw, case).cache_specs(CacheOptions(tp=1, kv_dtype_bytes=2))
                if isinstance(s, AttentionCacheSpec))
    assert theirs.page_size_bytes == BLOCK * ours.bytes_per_token, f"vLLM {theirs} vs hkv {ours}"
    assert isinstance(theirs, MLAAttentionSpec) == ours.is_mla
    assert (theirs.num_kv_heads, theirs.head_size, theirs.head_size_v) == (
        ours.num_kv_heads, ours.head_dim, ours.head_dim_v)
