"""KV heads and head size per TP rank of the classic families (GPT-2, GPT-J, BLOOM, Falcon, OPT, DBRX,
GPT-BigCode, StarCoder2, MPT, LongCat-Flash): hkv's model_specs against vLLM 0.32's own reading.

vLLM sizes every attention layer's cache from its ModelArchConfigConvertor (the family's subclass
where it has one: Falcon's multi_query / new_decoder_architecture, DBRX's attn_config.kv_n_heads,
LongCat-Flash's MLA latent) and ModelConfig.get_num_kv_heads (heads // TP, at least one; one for MLA).
Both run here on transformers' default config of each family (and Falcon-40B's geometry), and a
layer's bytes per token, 2 x heads x head size x 2 B (MLA: the latent x 2 B), must match hkv's.
"""

from __future__ import annotations

import importlib
import types

import pytest
from transformers import AutoConfig
from vllm.config import ModelConfig, ParallelConfig
from vllm.transformers_utils.model_arch_config_convertor import (
    MODEL_ARCH_CONFIG_CONVERTORS,
    ModelArchConfigConvertorBase,
)
from vllm.v1.kv_cache_interface import MLAAttentionSpec

from attention_module_spec import module_kv_spec
from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec
from hkv.model_specs.from_hf_config import from_hf_config

FAMILIES = [
    ("gpt2", {}), ("gptj", {}), ("bloom", {}), ("falcon", {}), ("opt", {}), ("dbrx", {}), ("gpt_bigcode", {}),
    ("gpt_bigcode", {"multi_query": False}), ("starcoder2", {}), ("mpt", {}), ("longcat_flash", {}),
    ("falcon", {"new_decoder_architecture": True, "num_kv_heads": 8, "hidden_size": 8192,
                "num_attention_heads": 128, "num_hidden_layers": 4}),
]


def _vllm_bytes_per_token(hf, tp: int) -> int:
    model_type = hf.model_type
    arch = MODEL_ARCH_CONFIG_CONVERTORS.get(model_type, ModelArchConfigConvertorBase)(hf, hf).convert()
    stub = types.SimpleNamespace(use_mla=arch.is_deepseek_mla, model_arch_config=arch)
    heads = ModelConfig.get_num_kv_heads(stub, ParallelConfig(tensor_parallel_size=tp))
    return arch.head_size * 2 if arch.is_deepseek_mla else 2 * heads * arch.head_size * 2


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
@pytest.mark.parametrize("model_type, overrides", FAMILIES, ids=lambda v: str(v))
def test_layer_bytes_per_token_match_vllm(model_type, overrides, tp):
    hf = AutoConfig.for_model(model_type, **overrides)
    spec = from_hf_config({**hf.to_dict(), "torch_dtype": "bfloat16"}, model_type)
    # LongCat-Flash builds two MLA attentions per block (num_hidden_layers = 2 x num_layers), every
    # other family one attention per layer.
    assert len(spec.cache_layers) == hf.num_hidden_layers
    ours = {c.cache_spec(CacheOptions(tp=tp, kv_dtype_bytes=2)).bytes_per_token for c in spec.cache_layers}
    assert ours == {_vllm_bytes_per_token(hf, tp)}


# The attention module each family's vLLM decoder layer builds, on a tiny config at TP 1 (gloo, CPU):
# its own get_kv_cache_spec, so stray keys the model code ignores (GPT-2's num_key_value_heads) and
# Falcon's multi_query / new_decoder_architecture branches are read as vLLM's model code reads them.
def _plain(module_name: str, cls: str):
    """`cls(config, cache_config=..., prefix=...)` from vllm.model_executor.models.<module_name>."""
    def build(vc, hf, prefix, use_mla):
        module = importlib.import_module(f"vllm.model_executor.models.{module_name}")
        return getattr(module, cls)(hf, cache_config=vc.cache_config, prefix=prefix)
    return build


def _opt(vc, hf, prefix, use_mla):
    from vllm.model_executor.models.opt import OPTAttention
    return OPTAttention(hf.hidden_size, hf.num_attention_heads, bias=hf.enable_bias,
                        cache_config=vc.cache_config, prefix=prefix)


def _longcat(vc, hf, prefix, use_mla):
    from vllm.model_executor.models.deepseek_v2 import DeepseekV2MLAAttention
    return DeepseekV2MLAAttention(
        vllm_config=vc, config=hf, hidden_size=hf.hidden_size, num_heads=hf.num_attention_heads,
        qk_nope_head_dim=hf.qk_nope_head_dim, qk_rope_head_dim=hf.qk_rope_head_dim, v_head_dim=hf.v_head_dim,
        q_lora_rank=hf.q_lora_rank, kv_lora_rank=hf.kv_lora_rank,
        max_position_embeddings=hf.max_position_embeddings, cache_config=vc.cache_config, prefix=prefix)


_FALCON = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1}
_FALCON_ATTN = _plain("falcon", "FalconAttention")
# case -> (model_type, tiny config, architecture, builder of the attention module vLLM's layer uses)
MODULE_CASES = {
    "gpt2-stray-gqa-keys": ("gpt2", {"n_embd": 64, "n_head": 4, "n_layer": 1, "num_key_value_heads": 2},
                            "GPT2LMHeadModel", _plain("gpt2", "GPT2Attention")),
    "gptj": ("gptj", {"n_embd": 64, "n_head": 4, "n_layer": 1, "rotary_dim": 8}, "GPTJForCausalLM",
             _plain("gpt_j", "GPTJAttention")),
    "bloom": ("bloom", {"hidden_size": 64, "n_head": 4, "n_layer": 1}, "BloomForCausalLM",
              _plain("bloom", "BloomAttention")),
    "falcon-multi-query": ("falcon", {**_FALCON, "num_kv_heads": 4}, "FalconForCausalLM", _FALCON_ATTN),
    "falcon-new-arch": ("falcon", {**_FALCON, "num_kv_heads": 2, "new_decoder_architecture": True},
                        "FalconForCausalLM", _FALCON_ATTN),
    "falcon-multi-head": ("falcon", {**_FALCON, "multi_query": False, "parallel_attn": False},
                          "FalconForCausalLM", _FALCON_ATTN),
    "opt": ("opt", {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1, "ffn_dim": 96},
            "OPTForCausalLM", _opt),
    "dbrx": ("dbrx", {"d_model": 64, "n_heads": 4, "n_layers": 1,
                      "attn_config": {"kv_n_heads": 2, "rope_theta": 1e4},
                      "ffn_config": {"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2}},
             "DbrxForCausalLM", _plain("dbrx", "DbrxAttention")),
    "longcat_flash": ("longcat_flash", {"hidden_size": 64, "num_attention_heads": 4, "num_layers": 1,
                                        "kv_lora_rank": 16, "q_lora_rank": 24, "qk_rope_head_dim": 8,
                                        "qk_nope_head_dim": 16, "v_head_dim": 16, "ffn_hidden_size": 64,
                                        "expert_ffn_hidden_size": 32, "n_routed_experts": 4,
                                        "zero_expert_num": 2, "moe_topk": 2},
                      "LongcatFlashForCausalLM", _longcat),
}


@pytest.mark.parametrize("case", sorted(MODULE_CASES))
def test_attention_module_page_equals_vllm(case: str, tp1_group: None) -> None:
    model_type, overrides, arch, build = MODULE_CASES[case]
    hf = AutoConfig.for_model(model_type, vocab_size=128, **overrides)
    theirs = module_kv_spec(build, hf, arch, f"model.layers.{sorted(MODULE_CASES).index(case)}.attn",
                            block_size=16)
    ours = next(s for _, s in from_hf_config({**hf.to_dict(), "torch_dtype": "bfloat16"}, case).cache_specs(
        CacheOptions(tp=1, kv_dtype_bytes=2)) if isinstance(s, AttentionCacheSpec))
    assert theirs.page_size_bytes == 16 * ours.bytes_per_token, f"vLLM {theirs} vs hkv {ours}"
    assert isinstance(theirs, MLAAttentionSpec) == ours.is_mla
    assert (theirs.num_kv_heads, theirs.head_size) == (ours.num_kv_heads, ours.head_dim)
