"""DeepSeek Sparse Attention families (DeepSeek-V3.2, GLM-5, Hunyuan-V4): MLA + the lightning
indexer's key cache, per layer and in bytes, against hand calculations from vLLM 0.32's model code.

Hand calculation of the indexer key (vLLM model_executor/models/deepseek_v2.py, Indexer.__init__):
index_head_dim 128 fp8 values + 128 // 128 = 1 fp32 scale (4 bytes) = 132 bytes per token, uint8,
whatever --kv-cache-dtype says. The MLA latent: (kv_lora_rank 512 + qk_rope_head_dim 64) = 576
elements, 1,152 bytes in bf16 and 576 in fp8.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import CacheKind, CacheRole
from hkv.model_specs.catalog import find_catalog_entry
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.indexer_cache import indexer_key_bytes

FAMILY_CONFIGS = Path("/tmp/fam/cfg")


def load_catalog_config(name: str) -> dict:
    return find_catalog_entry(name).load_config()


def _specs(config: dict, **opts: object) -> list:
    model = from_hf_config(config, "t")
    return [(layer, spec) for layer, spec in model.cache_specs(CacheOptions(**opts)) if spec is not None]


def _glm5(**extra: object) -> dict:
    return dict(load_catalog_config("glm-5"), **extra)


@pytest.mark.parametrize(("index_head_dim", "key_bytes"), [(128, 132), (64, 64), (256, 264)])
def test_indexer_key_bytes_are_fp8_values_plus_one_fp32_scale_per_128(index_head_dim: int, key_bytes: int) -> None:
    # 64: 64 // 128 = 0 scales (vLLM's integer division); 256: two scales, 8 bytes.
    assert indexer_key_bytes(index_head_dim) == key_bytes


@pytest.mark.parametrize(("kv_dtype_bytes", "latent_bytes"), [(2, 1152), (1, 576)])
def test_every_glm5_layer_caches_the_mla_latent_and_a_132_byte_indexer_key(kv_dtype_bytes: int,
                                                                           latent_bytes: int) -> None:
    specs = _specs(_glm5(), kv_dtype_bytes=kv_dtype_bytes)
    latents = [s for _, s in specs if s.role is CacheRole.KV]
    keys = [s for _, s in specs if s.role is CacheRole.INDEXER]
    assert len(latents) == len(keys) == 78
    assert {s.bytes_per_token for s in latents} == {latent_bytes}
    assert {s.bytes_per_token for s in keys} == {132}  # uint8 whatever the KV dtype
    assert {s.kind for _, s in specs} == {CacheKind.FULL}  # freed with the request, like full attention
    assert [layer.name for layer, _ in specs[:2]] == ["layers.0.attn", "layers.0.indexer"]  # vLLM's order


def test_indexer_is_replicated_across_tensor_parallel_ranks() -> None:
    """max_tp_shards=1 in vLLM: each rank caches the whole key, as it caches the whole latent."""
    assert {s.bytes_per_token for _, s in _specs(_glm5(), tp=8)} == {1152, 132}


# IndexCache: (config keys, layers that keep their own indexer). vLLM 0.32 deepseek_v32/attention.py:
# skip_topk = max(i - offset + 1, 0) % freq != 0, offset 2 by default; a pattern's 'S' skips.
INDEXER_LAYER_CASES = [
    ({}, list(range(78))),
    # GLM-5.2: freq 4, offset 3 -> i in 0, 1, 2 and i - 2 a multiple of 4 (6, 10, ..., 74): 21 layers
    ({"index_topk_freq": 4, "index_skip_topk_offset": 3}, [0, 1, 2, *range(6, 78, 4)]),
    # default offset 2: i in 0, 1 and i - 1 a multiple of 4 (5, 9, ..., 77): 21 layers
    ({"index_topk_freq": 4}, [0, 1, *range(5, 78, 4)]),
    ({"index_topk_pattern": "FS" * 39}, list(range(0, 78, 2))),
]


@pytest.mark.parametrize(("extra", "own_indexer"), INDEXER_LAYER_CASES)
def test_only_layers_that_compute_their_own_top_k_cache_indexer_keys(extra: dict, own_indexer: list[int]) -> None:
    specs = _specs(_glm5(**extra))
    assert [layer.layer_idx for layer, s in specs if s.role is CacheRole.INDEXER] == own_indexer
    assert sum(s.role is CacheRole.KV for _, s in specs) == 78  # every layer keeps its MLA latent


def test_glm52_catalog_entry_has_21_indexers() -> None:
    specs = _specs(load_catalog_config("glm-5.2"))
    assert sum(s.role is CacheRole.INDEXER for _, s in specs) == 21


def test_glm52_released_config_names_its_layers_deepseek_sparse_attention() -> None:
    """nvidia/GLM-5.2-NVFP4's config.json (transformers 5.11) spells the layer type
    "deepseek_sparse_attention": the same DSA layer, 78 latents and the 21 indexers above."""
    path = Path(__file__).resolve().parents[1] / "data" / "vllm_startups" / "configs" / "nvidia-glm-5.2-nvfp4.json"
    config = json.loads(path.read_text())
    assert set(config["layer_types"]) == {"deepseek_sparse_attention"}
    specs = _specs(config)
    assert sum(s.role is CacheRole.KV for _, s in specs) == 78
    assert sum(s.role is CacheRole.INDEXER for _, s in specs) == 21


def test_hunyuan_v4_reads_indexer_types() -> None:
    config = json.loads((FAMILY_CONFIGS / "hy_v4" / "config.json").read_text()) if (
        FAMILY_CONFIGS / "hy_v4" / "config.json").exists() else None
    if config is None:
        pytest.skip("transformers family configs not saved in /tmp/fam")
    types = config["indexer_types"]
    specs = _specs(config)
    assert [layer.layer_idx for layer, s in specs if s.role is CacheRole.INDEXER] == [
        i for i, t in enumerate(types) if t == "full"]


@pytest.mark.parametrize(("extra", "named"), [
    ({"index_topk_freq": 0}, "index_topk_freq"),
    ({"index_topk_pattern": "FX"}, "index_topk_pattern"),
])
def test_bad_index_cache_keys_name_the_key(extra: dict, named: str) -> None:
    with pytest.raises(InvalidConfigError, match=named):
        from_hf_config(_glm5(**extra), "t")


@pytest.mark.parametrize("name", ["deepseek-v3.2", "glm-5", "glm-5.2"])
def test_catalog_entries_are_dsa(name: str) -> None:
    model = from_hf_config(load_catalog_config(name), name)
    assert model.layer_mix()["full"] == model.num_hidden_layers + sum(
        layer.name.endswith(".indexer") for layer in model.cache_layers)


def test_indexed_layers_of_an_unmodeled_family_are_refused_not_guessed() -> None:
    """A family whose DSA geometry hkv does not know is refused (dots3 plans: tests/planner/test_dots3_layout.py)."""
    config = {"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "vocab_size": 10, "max_position_embeddings": 64, "index_head_dim": 128,
              "layer_types": ["indexed_attention", "sliding_attention"], "sliding_window": 8}
    with pytest.raises(InvalidConfigError, match="'qwen3'.*supported: deepseek_v32"):
        from_hf_config(config, "t")
