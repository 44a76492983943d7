"""The block stride of vLLM's block-outermost layout where specs ask for an alignment (Step5).

vLLM 0.33 sizes a block-outermost pool at the widest group's page sum rounded up to the lcm of
every layer's block stride alignment (v1/core/kv_cache_planning.py l.574-605,
_get_kv_cache_bytes_per_block): num_blocks = available // that. DeepSeek-V4's and dots3's specs
set none (1). Step5's sparse layers set two (model_specs/step5_layers.py): the K/V's 8-token
kernel page (STEP5_DSA's MultipleOf(8)) and the tail ring's 1,024-byte rows.
"""

from __future__ import annotations

from dataclasses import replace
from math import lcm

from hkv.model_specs.family_specs import is_circular_buffer_spec, is_sparse_kv_spec
from hkv.planner.layout import Pool, cdiv
from hkv.planner.paged_layer import PagedLayer
from hkv.planner.pool_sizing import bytes_per_block_by_stage


def _alignment_bytes(layer: PagedLayer) -> int:
    spec = layer.spec
    if is_sparse_kv_spec(spec) or is_circular_buffer_spec(spec):
        return spec.block_stride_alignment_bytes(layer.block_size)
    return 1


def block_stride_alignment(layers: list[PagedLayer]) -> int:
    """lcm of every layer's block stride alignment in bytes (1: none asked)."""
    return lcm(1, *(_alignment_bytes(layer) for layer in layers))


def aligned_pool(pool: Pool, groups: list[list[PagedLayer]], budget_bytes: int, num_hidden_layers: int,
                 pp: int) -> Pool:
    """`pool` (pool_sizing.size_pool's) with each stage's bytes per block rounded up to the groups'
    block stride alignment and num_blocks recounted; `pool` itself when no layer asks for one."""
    alignment = block_stride_alignment([layer for group in groups for layer in group])
    if alignment == 1:
        return pool
    stages = [cdiv(b, alignment) * alignment for b in bytes_per_block_by_stage(groups, num_hidden_layers, pp) if b]
    num_blocks, bytes_per_block = min((max(0, budget_bytes) // b, b) for b in stages)
    return replace(pool, num_blocks=num_blocks, bytes_per_block=bytes_per_block)
