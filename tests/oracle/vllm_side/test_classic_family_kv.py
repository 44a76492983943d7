"""KV heads and head size per TP rank of the classic families (GPT-2, GPT-J, BLOOM, Falcon, OPT, DBRX,
GPT-BigCode, StarCoder2, MPT, LongCat-Flash): hkv's model_specs against vLLM 0.32's own reading.

vLLM sizes every attention layer's cache from its ModelArchConfigConvertor (the family's subclass
where it has one: Falcon's multi_query / new_decoder_architecture, DBRX's attn_config.kv_n_heads,
LongCat-Flash's MLA latent) and ModelConfig.get_num_kv_heads (heads // TP, at least one; one for MLA).
Both run here on transformers' default config of each family (and Falcon-40B's geometry), and a
layer's bytes per token, 2 x heads x head size x 2 B (MLA: the latent x 2 B), must match hkv's.
"""

from __future__ import annotations

import types

import pytest
from transformers import AutoConfig
from vllm.config import ModelConfig, ParallelConfig
from vllm.transformers_utils.model_arch_config_convertor import (
    MODEL_ARCH_CONFIG_CONVERTORS,
    ModelArchConfigConvertorBase,
)

from hkv.model_specs.cache_options import CacheOptions
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
