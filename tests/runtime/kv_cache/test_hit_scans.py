"""The coordinator's hit scan (longest_hit_len_in, over hash maps) against each kind's reference
scan (longest_hit_len, over a predicate): same result for random cached sets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rt_layouts import CHUNKED, FULL, RECURRENT, SLIDING, hit_len, lone_manager, make_group


@st.composite
def managers(draw: st.DrawFn):
    kind = draw(st.sampled_from([FULL, SLIDING, CHUNKED, RECURRENT]))
    block_size = draw(st.sampled_from([1, 2, 4]))
    if kind is SLIDING:
        return lone_manager(make_group(kind, block_size, window=draw(st.integers(1, 20))))
    if kind is CHUNKED:
        return lone_manager(make_group(kind, block_size, chunk=block_size * draw(st.integers(1, 4))))
    if kind is RECURRENT:
        return lone_manager(make_group(kind, block_size, num_state_blocks=draw(st.integers(1, 2))))
    return lone_manager(make_group(kind, block_size))


@settings(max_examples=500, deadline=None)
@given(manager=managers(), data=st.data())
def test_both_scans_agree(manager, data: st.DataObject) -> None:
    max_len = data.draw(st.integers(0, 60))
    alignment = manager.block_size * data.draw(st.sampled_from([1, 1, 2, 3]))
    num_positions = max_len // manager.block_size + 1
    cached = data.draw(st.sets(st.integers(0, num_positions)))
    hit_len(manager, cached, max_len, alignment)  # asserts the two scans agree
