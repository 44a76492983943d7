"""DeepSeek-V4's KV cache groups against vLLM 0.32's own spec classes and packed grouping.

The window, compressor-state and indexer-key specs come from vLLM's own cache modules
(DeepseekV4SWACache, CompressorStateCache, DeepseekV4IndexerCache `get_kv_cache_spec`); the
compressed latent spec is built as DeepseekV4 attention's `get_kv_cache_spec` builds it
(models/deepseek_v4/attention.py:856-880: fp8_ds_mla, tokens_per_state = ratio, alignment 576; the
module itself needs CUDA kernels). Modules are created in the model's order: the 4:1 layer's
indexer (keys, then its compressor), the window cache, the attention layer, its compressor.
vLLM then groups (block-outermost BLHNC, the layout DEEPSEEK_V4_INDEXER declares) and sizes the pool;
hkv's `vllm` layout (planner/compressed_attention_layout.py's packing) must give the same groups,
per-layer pages, bytes per block, num_blocks and concurrency; for transformers' default config and
for the DeepSeek-V4-Flash catalog entry (window-only layers 0 and 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.resolve import load_model_spec
from packed_layout_check import assert_vllm_layout_equals, packed_vllm_config
from vllm.config import VllmConfig, set_current_vllm_config
from vllm.models.deepseek_v4.attention import DeepseekV4IndexerCache
from vllm.models.deepseek_v4.compressor import CompressorStateCache
from vllm.v1.attention.backends.mla.sparse_swa import DeepseekV4SWACache
from vllm.v1.kv_cache_interface import MLAAttentionSpec, get_kv_quant_mode

# transformers 5.24's default DeepseekV4Config (43 layers: 20 at 4:1, 23 at 128:1, window 128)
CONFIG = json.loads((Path(__file__).resolve().parents[2] / "data" / "configs" / "deepseek_v4.json").read_text())
GIB = 2**30


def _vllm_specs(vc: VllmConfig, ratios: list[int]) -> dict:
    out: dict = {}
    cc = vc.cache_config
    with set_current_vllm_config(vc):
        for i, ratio in enumerate(ratios):
            modules = []
            if ratio == 4:
                modules += [DeepseekV4IndexerCache(head_dim=132, dtype=torch.uint8, prefix=f"layers.{i}.indexer.k_cache",
                                                   cache_config=cc, compress_ratio=4),
                            CompressorStateCache(state_dim=2 * 2 * 128, dtype=torch.float32, compress_ratio=4,
                                                 prefix=f"layers.{i}.indexer.compressor.state_cache")]
            modules.append(DeepseekV4SWACache(head_dim=512, window_size=CONFIG["sliding_window"], dtype=torch.uint8,
                                              prefix=f"layers.{i}.swa_cache", cache_config=cc))
            for m in modules:
                out[m.prefix] = m.get_kv_cache_spec(vc)
            if ratio > 1:
                out[f"layers.{i}.attn"] = MLAAttentionSpec(
                    block_size=cc.block_size, num_kv_heads=1, max_tp_shards=1, head_size=512, dtype=torch.uint8,
                    tokens_per_state=ratio, cache_dtype_str="fp8_ds_mla", alignment=576, model_version="deepseek_v4",
                    kv_quant_mode=get_kv_quant_mode("fp8_ds_mla"), state_content_bytes=584)
                coff = 1 + (ratio == 4)
                comp = CompressorStateCache(state_dim=2 * coff * 512, dtype=torch.float32, compress_ratio=ratio,
                                            prefix=f"layers.{i}.compressor.state_cache")
                out[comp.prefix] = comp.get_kv_cache_spec(vc)
    return out


MODELS = {"default": lambda: from_hf_config(CONFIG, "dsv4"), "flash": lambda: load_model_spec("deepseek-v4-flash")}


def _ratios(model) -> list[int]:
    ratios = {}
    for layer in model.cache_layers:
        spec = layer.spec
        if spec.module == "attn":
            ratios[layer.layer_idx] = spec.tokens_per_state
        ratios.setdefault(layer.layer_idx, 1)
    return [ratios[i] for i in range(model.num_hidden_layers)]


@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.parametrize("available_gib,max_model_len,mnbt", [(18.65, 200000, 8192), (60, 1048576, 16384)])
def test_deepseek_v4_groups_equal_vllm(model_name: str, available_gib: float, max_model_len: int, mnbt: int) -> None:
    model = MODELS[model_name]()
    vc = packed_vllm_config(max_model_len, mnbt, block_size=256, cache_dtype="fp8_ds_mla")
    assert_vllm_layout_equals(model, vc, _vllm_specs(vc, _ratios(model)), int(available_gib * GIB))
