"""Turn grouped paged layers into Layout groups and a sized Pool."""

from __future__ import annotations

from collections.abc import Callable

from hkv.model_specs.cache_spec import StateCacheSpec
from hkv.planner.layout import BlockBound, KVCacheGroup, Pool
from hkv.planner.paged_layer import PagedLayer, pp_stage_of


StateBlocks = Callable[[StateCacheSpec], int]  # state blocks a request holds, per recurrent spec


def to_kv_groups(groups: list[list[PagedLayer]], pool_id: int, state_blocks: StateBlocks | None = None,
                 bound: BlockBound = BlockBound.VLLM) -> list[KVCacheGroup]:
    """`state_blocks` is required when a group is recurrent."""
    out = []
    for members in groups:
        head = members[0]
        spec = head.spec
        out.append(KVCacheGroup(
            kind=head.kind,
            layer_names=tuple(m.name for m in members),
            layer_ids=tuple(m.layer_idx for m in members),
            spec=head.spec,
            block_size=head.block_size,
            page_size_bytes=_slot_bytes(members),
            pool_id=pool_id,
            num_state_blocks=state_blocks(spec) if isinstance(spec, StateCacheSpec) and state_blocks else None,
            bound=bound,
        ))
    return out


def _slot_bytes(members: list[PagedLayer]) -> int:
    """One layer slot of a block; a vLLM UniformTypeKVCacheSpecs group (one kind, layers of different
    head sizes: Gemma 4 without the hybrid manager) has no single page, so the mean over its layers."""
    pages = {m.page_size_bytes for m in members}
    return members[0].page_size_bytes if len(pages) == 1 else sum(m.page_size_bytes for m in members) // len(members)


def bytes_per_block_by_stage(groups: list[list[PagedLayer]], num_hidden_layers: int,
                             pp: int) -> list[int]:
    """Per pipeline stage: the largest group's bytes on that stage (layer-outer layout)."""
    per_stage = [0] * pp
    for members in groups:
        stage_bytes = [0] * pp
        for m in members:
            stage_bytes[pp_stage_of(m.layer_idx, num_hidden_layers, pp)] += m.page_size_bytes
        per_stage = [max(a, b) for a, b in zip(per_stage, stage_bytes)]
    return per_stage


def size_pool(pool_id: int, kind: str, groups: list[list[PagedLayer]], budget_bytes: int,
              num_hidden_layers: int, pp: int) -> Pool:
    """num_blocks = min over stages of budget // that stage's bytes per block."""
    stages = [b for b in bytes_per_block_by_stage(groups, num_hidden_layers, pp) if b > 0]
    num_blocks, bytes_per_block = min((max(0, budget_bytes) // b, b) for b in stages)
    num_slots = max(len(members) for members in groups)
    return Pool(pool_id, kind, num_blocks, bytes_per_block, num_slots)
