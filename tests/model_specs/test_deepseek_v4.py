"""DeepSeek-V4's caches as vLLM 0.32 builds them (model_specs/compressed_attention.py), by hand.

Page arithmetic (fp8_ds_mla: a latent state is 584 B; every page rounds up to a multiple of 576 B):
  window cache, 64-token blocks:        64 x 584  = 37,376 -> 65 x 576 = 37,440
  4:1 latents, 256-token blocks:        64 x 584  = 37,376 -> 37,440
  128:1 latents, 256-token blocks:       2 x 584  =  1,168 ->  3 x 576 =  1,728
  indexer keys (128 + 4 B), 4:1:        64 x 132  =  8,448 -> 15 x 576 =  8,640
  4:1 compressor, fp32 2 x 2 x 512:      4 x 8,192 = 32,768 -> 57 x 576 = 32,832
  128:1 compressor, fp32 2 x 1 x 512:    8 x 4,096 = 32,768 -> 32,832
  indexer compressor, fp32 2 x 2 x 128:  4 x 2,048 =  8,192 -> 15 x 576 =  8,640
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.compressed_attention import CompressedCacheSpec
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.resolve import load_model_spec

DEFAULT = json.loads((Path(__file__).resolve().parents[1] / "data" / "configs" / "deepseek_v4.json").read_text())
# A 4-layer cut of DeepSeek-V4-Flash's pattern: window only, 4:1, 128:1, 4:1.
SMALL = {**{k: v for k, v in DEFAULT.items() if k not in ("layer_types", "mlp_layer_types")},
         "num_hidden_layers": 4, "compress_ratios": [0, 4, 128, 4, 0]}


def _caches(config: dict) -> list[tuple[str, CompressedCacheSpec]]:
    model = from_hf_config(config, "dsv4")
    out = []
    for layer in model.cache_layers:
        spec = layer.cache_spec(CacheOptions(kv_dtype_bytes=2, tp=4))
        assert isinstance(spec, CompressedCacheSpec)
        out.append((layer.name, spec))
    return out


def test_each_layer_caches_what_vllm_registers_in_its_order() -> None:
    """Window-only layers: the window; 4:1 layers: indexer keys and their compressor first (the
    indexer is built before the window cache), then window, latents, compressor; 128:1 no indexer.
    The MTP entry past num_hidden_layers is not a layer."""
    names = [name for name, _ in _caches(SMALL)]
    assert names == [
        "layers.0.swa_cache",
        "layers.1.indexer.k_cache", "layers.1.indexer.compressor.state_cache", "layers.1.swa_cache",
        "layers.1.attn", "layers.1.compressor.state_cache",
        "layers.2.swa_cache", "layers.2.attn", "layers.2.compressor.state_cache",
        "layers.3.indexer.k_cache", "layers.3.indexer.compressor.state_cache", "layers.3.swa_cache",
        "layers.3.attn", "layers.3.compressor.state_cache",
    ]


@pytest.mark.parametrize("name,kind,window,block,page", [
    ("layers.0.swa_cache", CacheKind.SLIDING, 128, 64, 37_440),
    ("layers.1.attn", CacheKind.FULL, None, 256, 37_440),
    ("layers.2.attn", CacheKind.FULL, None, 256, 1_728),
    ("layers.1.indexer.k_cache", CacheKind.FULL, None, 256, 8_640),
    ("layers.1.compressor.state_cache", CacheKind.SLIDING, 8, 4, 32_832),
    ("layers.2.compressor.state_cache", CacheKind.SLIDING, 128, 8, 32_832),
    ("layers.1.indexer.compressor.state_cache", CacheKind.SLIDING, 8, 4, 8_640),
])
def test_pages_by_hand(name: str, kind: CacheKind, window: int | None, block: int, page: int) -> None:
    spec = dict(_caches(SMALL))[name]
    assert (spec.kind, spec.window_len) == (kind, window)
    size = spec.block_len or 256  # the latents and indexer keys take the cache block size
    assert size == block
    assert spec.page_size_bytes(size) == page


def test_ratios_from_transformers_layer_types() -> None:
    """transformers' default config names the layers; compress_rates gives their ratios (3 x 128:1,
    then 4:1 and 128:1 alternating: 20 indexed layers of 43)."""
    names = [name for name, _ in _caches(DEFAULT)]
    assert sum(n.endswith(".indexer.k_cache") for n in names) == 20
    assert sum(n.endswith(".attn") for n in names) == 43
    assert sum(n.endswith(".swa_cache") for n in names) == 43


def test_param_count_equals_transformers() -> None:
    """transformers 5.24 DeepseekV4ForCausalLM on the meta device, default config: 284,325,869,015."""
    assert from_hf_config(DEFAULT, "dsv4").num_params == 284_325_869_015


def test_catalog_flash_entry() -> None:
    model = load_model_spec("deepseek-v4-flash")
    names = [layer.name for layer in model.cache_layers]
    assert sum(n.endswith(".indexer.k_cache") for n in names) == 21  # layers 2, 4, ..., 42
    assert sum(n.endswith(".attn") for n in names) == 41  # all but the window-only layers 0 and 1
    assert model.max_model_len == 1_048_576


@pytest.mark.parametrize("change,message", [
    ({"compress_ratios": [0, 2, 4, 4]}, "compression ratio"),
    ({"head_dim": 256}, "head_dim 256"),
    ({"compress_ratios": [0, 4]}, "compress_ratios must list 4 layers"),
])
def test_refusals(change: dict, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        from_hf_config({**SMALL, **change}, "dsv4")


def test_compressed_names_outside_deepseek_v4_are_refused() -> None:
    config = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 128,
              "layer_types": ["full_attention", "heavily_compressed_attention"]}
    with pytest.raises(InvalidConfigError, match="heavily compressed"):
        from_hf_config(config, "x")
    with pytest.raises(InvalidConfigError, match="deepseek_v4 only"):
        from_hf_config({**config, "layer_types": ["full_attention", "compressed_attention"]}, "x")
