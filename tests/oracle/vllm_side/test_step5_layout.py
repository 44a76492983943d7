"""Step5 (vLLM 0.33's Step5ForCausalLM) against vLLM 0.32's grouping, which 0.33 keeps.

vLLM 0.32 has no Step5 model, but its kv_cache_utils already holds the code 0.33 moved to
v1/core/kv_cache_planning.py: `_get_packed_kv_cache_groups` (0.33 only moved the EAGLE annotation
out of it), `_get_kv_cache_bytes_per_block` and `_approximate_gcd` are the same text, and so are
CircularBufferSpec and get_block_stride_alignment in kv_cache_interface.py (checked by diffing the two
releases' sources). So the specs 0.33's Step5 builds are written out here by hand (models/step5/nvidia/)
and handed to 0.32's functions:

- K/V of a sparse layer: FullAttentionSpec(block, kv heads, 192, bf16) with STEP5_DSA's
  block_stride_alignment MultipleOf(8) (sparse_attention.py l.889-893, attn_utils.py l.149);
- its summary: FullAttentionSpec(block, 1, 256, head_size_v 0, uint8, tokens_per_state 8)
  (sparse_summary_cache.py l.143-154);
- its tail ring: CircularBufferSpec(block, 1, page / (block x 2), 0, bf16, block_stride_alignment
  1,024) (csa_tail_ring.py l.166-188);
- a sliding layer: SlidingWindowSpec(block, kv heads, 192, bf16, window) (attention.py l.624-673,
  FLASH_ATTN runs the plan's block);
in the BLNHC layout STEP5_DSA declares (the only one it supports).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hkv.model_specs.from_hf_config import from_hf_config
from packed_layout_check import assert_vllm_layout_equals, packed_vllm_config
from vllm.v1.attention.backend import MultipleOf
from vllm.v1.kv_cache_interface import CircularBufferSpec, FullAttentionSpec, SlidingWindowSpec

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "configs"
GIB = 2**30


def _vllm_specs(config: dict, block: int) -> dict:
    kv_heads, head_dim = config["num_attention_groups"], config["head_dim"]
    page = block * kv_heads * 2 * head_dim * 2
    out: dict = {}
    for i, kind in enumerate(config["layer_types"][:config["num_hidden_layers"]]):
        if kind == "sliding_attention":
            out[f"layers.{i}.attn"] = SlidingWindowSpec(block_size=block, num_kv_heads=kv_heads, head_size=head_dim,
                                                        dtype=torch.bfloat16, sliding_window=config["sliding_window"])
            continue
        out[f"layers.{i}.attn"] = FullAttentionSpec(block_size=block, num_kv_heads=kv_heads, head_size=head_dim,
                                                    dtype=torch.bfloat16, block_stride_alignment=MultipleOf(8))
        out[f"layers.{i}.attn.sparse_summary_cache"] = FullAttentionSpec(
            block_size=block, num_kv_heads=1, head_size=256, head_size_v=0, dtype=torch.uint8, tokens_per_state=8)
        out[f"layers.{i}.attn.csa_tail_ring"] = CircularBufferSpec(
            block_size=block, num_kv_heads=1, head_size=page // (block * 2), head_size_v=0, dtype=torch.bfloat16,
            block_stride_alignment=1024)
    return out


@pytest.mark.parametrize("name,block,available_gib,max_model_len,mnbt", [
    ("step5_preview", 16, 20, 8192, 8192),
    ("step5_preview", 32, 40, 131072, 2048),
    ("step5_tiny", 16, 0.01, 2048, 2048),
])
def test_step5_groups_equal_vllm(name: str, block: int, available_gib: float, max_model_len: int, mnbt: int) -> None:
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    vc = packed_vllm_config(max_model_len, mnbt, block_size=block, cache_dtype="auto")
    vc.cache_config.kv_cache_layout = "BLNHC"
    model = from_hf_config(config, name)
    assert_vllm_layout_equals(model, vc, _vllm_specs(config, block), int(available_gib * GIB), block_size=block)
