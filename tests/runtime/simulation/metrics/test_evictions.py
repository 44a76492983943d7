"""Evictions in tokens of the attention stack and states of the recurrent stack, by hand."""

from rt_layouts import FULL, RECURRENT, SLIDING, make_group

from hkv.planner.layout import KVCacheGroup
from hkv.runtime.simulation.metrics.evictions import Evictions, evictions_of


def _with_layers(group: KVCacheGroup, num_layers: int) -> KVCacheGroup:
    names = tuple(f"layer.{i}" for i in range(num_layers))
    return KVCacheGroup(group.kind, names, tuple(range(num_layers)), group.spec, group.block_size,
                        group.page_size_bytes, group.pool_id, group.num_state_blocks)


def test_groups_weigh_by_their_layers() -> None:
    groups = (_with_layers(make_group(FULL, 16), 2), _with_layers(make_group(SLIDING, 16, window=32), 4),
              _with_layers(make_group(RECURRENT, 16), 3))
    # attention: (10 blocks x 16 tokens x 2 layers + 5 x 16 x 4) / 6 attention layers = 640 / 6
    # recurrent: 7 state blocks x 3 layers / 3 recurrent layers = 7
    assert evictions_of(groups, [10, 5, 7]) == Evictions(22, 640 / 6, 7.0)


def test_one_group_or_several_count_the_same_tokens() -> None:
    # 4 layers in one group evicting 3 blocks of 16 tokens = the same 4 layers in 4 groups
    # evicting 3 blocks each: 48 tokens of the whole stack either way
    one = evictions_of((_with_layers(make_group(FULL, 16), 4),), [3])
    four = evictions_of(tuple(_with_layers(make_group(FULL, 16), 1) for _ in range(4)), [3, 3, 3, 3])
    assert one.evicted_tokens == four.evicted_tokens == 48.0
    assert (one.num_evicted_blocks, four.num_evicted_blocks) == (3, 12)


def test_no_recurrent_layers_no_states() -> None:
    assert evictions_of((make_group(FULL, 16),), [0]) == Evictions(0, 0.0, 0.0)
