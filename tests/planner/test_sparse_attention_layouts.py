"""DSA models (MLA + lightning-indexer keys) planned as vLLM plans them: one UniformTypeKVCacheSpecs
group whose 64-token block holds every layer's latent page and every indexer's key page.

Worked example, GLM-5.2 start-up record r009 (vLLM 0.26.0, TP 4, fp8 KV, "Available KV cache memory:
50.62 GiB", "GPU KV cache size: 1,139,456 tokens"): 78 latents x 64 tokens x 576 B = 2,875,392 B plus
21 indexers x 64 x 132 B = 177,408 B is 3,052,800 B per block; 50.62 GiB // 3,052,800 = 17,804 blocks
= 1,139,456 tokens, the logged figure.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import CacheRole
from hkv.model_specs.catalog import find_catalog_entry
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.capacity.capacity import kv_cache_tokens
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import build_layout
from hkv.planner.plan_config import PlanConfig

GIB = 2**30
VLLM_PYTHON = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"


def _model(name: str):
    return from_hf_config(find_catalog_entry(name).load_config(), name)


def _layout(name: str, layout: str = "vllm", **cfg: object):
    model = _model(name)
    config = PlanConfig(**cfg)
    return build_layout(layout, model, config, compute_memory_budget(model, config))


def test_glm52_record_kv_tokens_from_the_logged_budget() -> None:
    layout = _layout("glm-5.2", gpu="gb200", tp=4, kv_cache_dtype="fp8", vllm_version="0.26.0",
                     max_model_len=819200, available_kv_memory_bytes=int(50.62 * GIB))
    (group,) = layout.groups
    assert group.block_size == 64
    assert layout.pools[0].bytes_per_block == 3_052_800
    assert kv_cache_tokens(layout, PlanConfig(vllm_version="0.26.0").vllm_rules().log_format) == 1_139_456


@pytest.mark.parametrize("layout_name", ["vllm", "vllm-no-hybrid", "hkv", "partitioned"])
def test_latents_and_indexer_keys_share_one_group(layout_name: str) -> None:
    """GLM-5 (every layer indexed), bf16: 78 x 64 x (1,152 + 132) = 6,409,728 B per block."""
    layout = _layout("glm-5", layout_name, gpu="h100", available_kv_memory_bytes=64 * 6_409_728)
    (group,) = layout.groups
    assert len(group.layer_names) == 156 and sum(n.endswith(".indexer") for n in group.layer_names) == 78
    assert layout.pools[0].bytes_per_block == 6_409_728
    assert layout.pools[0].num_blocks == 64


def test_block_size_must_be_a_multiple_of_the_indexer_kernel_block() -> None:
    with pytest.raises(InvalidInputError, match="multiple of 64"):
        _layout("glm-5", gpu="h100", block_size=16)
    assert _layout("glm-5", gpu="h100", block_size=128).groups[0].block_size == 128


ORACLE = """
import torch
from vllm.v1.kv_cache_interface import MLAAttentionSpec, SparseCacheRole, UniformTypeKVCacheSpecs
# DeepseekV32IndexerCache.get_kv_cache_spec and MLAAttention.get_kv_cache_spec (vLLM 0.32), block 64
idx = MLAAttentionSpec(block_size=64, num_kv_heads=1, max_tp_shards=1, head_size=132, dtype=torch.uint8,
                       cache_role=SparseCacheRole.INDEXER)
lead = MLAAttentionSpec(block_size=64, num_kv_heads=1, max_tp_shards=1, head_size=576, dtype=torch.bfloat16,
                        is_index_group_leader=True)
plain = MLAAttentionSpec(block_size=64, num_kv_heads=1, max_tp_shards=1, head_size=576, dtype=torch.bfloat16)
group = UniformTypeKVCacheSpecs.from_specs({"l0.attn": lead, "l0.idx": idx, "l1.attn": plain})
print(idx.page_size_bytes, lead.page_size_bytes, group.page_size_bytes)
"""


@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="the vLLM oracle environment (.venv-vllm) is not installed")
def test_vllm_builds_the_same_pages_and_one_uniform_group() -> None:
    out = subprocess.run([str(VLLM_PYTHON), "-c", ORACLE], capture_output=True, text=True, check=True, timeout=300)
    indexer_page, latent_page, group_page = map(int, out.stdout.split()[-3:])
    layout = _layout("glm-5", gpu="h100", available_kv_memory_bytes=GIB)
    pages = {name: page for name, page in zip(layout.groups[0].layer_names, _pages(layout))}
    assert (indexer_page, latent_page) == (pages["layers.0.indexer"], pages["layers.0.attn"])
    assert group_page == 2 * latent_page + indexer_page  # one group: the block holds every layer's page


def _pages(layout) -> list[int]:
    spec_of = {layer.name: spec for layer, spec in _model("glm-5").cache_specs(CacheOptions())}
    return [spec_of[name].page_size_bytes(layout.groups[0].block_size) for name in layout.groups[0].layer_names]


def test_indexer_role_survives_promotion_to_full() -> None:
    """--disable-hybrid-kv-cache-manager promotes local layers; the indexer keeps its role and bytes."""
    model = _model("glm-5")
    spec = next(s for layer, s in model.cache_specs(CacheOptions()) if s is not None and s.role is CacheRole.INDEXER)
    assert spec.as_full() == spec
