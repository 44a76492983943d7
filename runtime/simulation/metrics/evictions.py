"""Evictions in units that compare across layouts with different group counts.

The KV cache counts evicted blocks per group block: a layout that splits 62 layers into 13 groups
evicts 13 small blocks where a 1-group layout evicts one big one for the same tokens. Weighting
each group by its layers makes the figures layout-independent:

    evicted_tokens = sum over attention groups (full, sliding, chunked) of
                     evicted blocks x block_size x layers of the group / attention layers
    evicted_states = sum over recurrent groups of evicted blocks x layers of the group / recurrent layers

evicted_tokens is in tokens of the whole attention stack ("token-layers" / attention layers): a
1,024-token prefix evicted from every attention layer counts 1,024 whatever the grouping, a
sliding group's block counts for its share of the layers. evicted_states counts cached recurrent
state checkpoints of the whole recurrent stack (a state block stands for one position, not for
block_size tokens, hence its own unit). Layers are the layout's, i.e. one rank's stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import KVCacheGroup


@dataclass(frozen=True)
class Evictions:
    num_evicted_blocks: int  # cached blocks reused for other data, per group block (all groups)
    evicted_tokens: float  # attention KV, in tokens of the whole attention stack (module docstring)
    evicted_states: float  # recurrent checkpoints, in states of the whole recurrent stack


def evictions_of(groups: Sequence[KVCacheGroup], evicted_blocks: Sequence[int]) -> Evictions:
    """`evicted_blocks[g]`: blocks of group g evicted, in layout group order."""
    attention_layers = sum(g.num_layers for g in groups if g.kind is not CacheKind.RECURRENT)
    recurrent_layers = sum(g.num_layers for g in groups if g.kind is CacheKind.RECURRENT)
    token_layers = 0
    state_layers = 0
    for group, num_blocks in zip(groups, evicted_blocks, strict=True):
        if group.kind is CacheKind.RECURRENT:
            state_layers += num_blocks * group.num_layers
        else:
            token_layers += num_blocks * group.block_size * group.num_layers
    return Evictions(
        num_evicted_blocks=sum(evicted_blocks),
        evicted_tokens=token_layers / attention_layers if attention_layers else 0.0,
        evicted_states=state_layers / recurrent_layers if recurrent_layers else 0.0,
    )
