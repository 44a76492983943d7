"""probe_capacity on tiny hand-built layouts: every expected count is worked out by hand below.

Notation: a pool of N blocks has N - 1 usable ones (block 0 is the null block, never handed out).
A request of L tokens holds, per group with block size b (vllm-hybrid-kv.md 2.3):
    full       cdiv(L, b)
    sliding    cdiv(min(W - 1 + T, L), b) + 1     W: window; +1 for window/block misalignment
    chunked    cdiv(min(C + T, L), b)             C: chunk length
    recurrent  its state blocks (independent of L)
where T is the in-flight allowance, 2 x max_num_batched_tokens (async scheduling). The probe's
count is min over pools of (usable blocks // blocks per request summed over the pool's groups).

Each row also carries the figure a plausible mistake would give (null block counted, +1 forgotten,
T forgotten, states per token) and asserts the probe differs from it: the expectation can fail.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hkv.planner.layout import Layout
from hkv.runtime import probe_capacity
from rt_layouts import CHUNKED, FULL, RECURRENT, SLIDING, make_group, make_layout


@dataclass(frozen=True)
class Case:
    name: str
    layout: Layout
    seq_len: int
    expected: int  # hand count (derivation in the comment of the row)
    wrong: int  # the count of a plausible mistake, named in the comment


CASES = [
    # full b=4, L=32: cdiv(32, 4) = 8 blocks. 24 blocks -> 23 usable -> 23 // 8 = 2.
    # wrong: counting the null block, 24 // 8 = 3.
    Case("full", make_layout([make_group(FULL, 4)], [24], max_model_len=32), 32, 2, 3),
    # full b=4, L=33: cdiv(33, 4) = 9 blocks (a partial block is a whole block). 27 -> 26 usable
    # -> 26 // 9 = 2. wrong: rounding down, 33 // 4 = 8 blocks -> 26 // 8 = 3.
    Case("full, partial last block", make_layout([make_group(FULL, 4)], [27], max_model_len=33), 33, 2, 3),
    # sliding b=4, W=5, T=6 (mnbt 3), L=40: min(5 - 1 + 6, 40) = 10 -> cdiv(10, 4) + 1 = 4 blocks.
    # 17 blocks -> 16 usable -> 16 // 4 = 4. wrong: no misalignment block, 3 blocks -> 16 // 3 = 5.
    Case("sliding", make_layout([make_group(SLIDING, 4, window=5)], [17], max_model_len=40,
                                in_flight_tokens=6), 40, 4, 5),
    # sliding, short request L=7 < W - 1 + T = 10: cdiv(7, 4) + 1 = 3 blocks; 16 // 3 = 5.
    # wrong: ignoring L (the 4 blocks of the long request), 16 // 4 = 4.
    Case("sliding, request shorter than window + T",
         make_layout([make_group(SLIDING, 4, window=5)], [17], max_model_len=40, in_flight_tokens=6),
         7, 5, 4),
    # chunked b=4, C=8, T=6, L=36: min(8 + 6, 36) = 14 -> cdiv(14, 4) = 4 blocks. 21 -> 20 usable
    # -> 20 // 4 = 5. wrong: forgetting T, cdiv(8, 4) = 2 blocks -> 20 // 2 = 10.
    Case("chunked", make_layout([make_group(CHUNKED, 4, chunk=8)], [21], max_model_len=36,
                                in_flight_tokens=6), 36, 5, 10),
    # recurrent, 3 state blocks per request whatever L (here 64, b=8). 10 -> 9 usable -> 9 // 3 = 3.
    # wrong: one block per 8 tokens, cdiv(64, 8) = 8 -> 9 // 8 = 1.
    Case("recurrent", make_layout([make_group(RECURRENT, 8, num_state_blocks=3)], [10], max_model_len=64),
         64, 3, 1),
    # one pool, full b=2 + sliding b=4 W=5, T=6, L=40: full cdiv(40, 2) = 20, sliding
    # cdiv(min(4 + 6, 40), 4) + 1 = 4 -> 24 per request. 72 -> 71 usable -> 71 // 24 = 2.
    # wrong: null block counted, 72 // 24 = 3.
    Case("full + sliding, one pool",
         make_layout([make_group(FULL, 2), make_group(SLIDING, 4, window=5)], [72], max_model_len=40,
                     in_flight_tokens=6), 40, 2, 3),
    # two pools, T=4 (mnbt 2), L=36.
    #   pool 0: chunked b=4 C=8: cdiv(min(8 + 4, 36), 4) = 3; full b=4: cdiv(36, 4) = 9 -> 12.
    #           49 -> 48 usable -> 48 // 12 = 4.
    #   pool 1: sliding b=2 W=6: cdiv(min(6 - 1 + 4, 36), 2) + 1 = cdiv(9, 2) + 1 = 6; recurrent 2
    #           -> 8. 32 -> 31 usable -> 31 // 8 = 3.
    #   min(4, 3) = 3. wrong: null block counted, min(49 // 12, 32 // 8) = min(4, 4) = 4.
    Case("chunked + full | sliding + recurrent, two pools",
         make_layout([make_group(CHUNKED, 4, chunk=8, pool_id=0), make_group(FULL, 4, pool_id=0),
                      make_group(SLIDING, 2, window=6, pool_id=1),
                      make_group(RECURRENT, 4, num_state_blocks=2, pool_id=1)],
                     [49, 32], max_model_len=36, in_flight_tokens=4), 36, 3, 4),
    # the same two pools; the binding pool is pool 0 when it shrinks to 25 -> 24 usable -> 24 // 12 = 2,
    # pool 1 still 3: min = 2. wrong: taking the other pool's 3.
    Case("two pools, the other pool binds",
         make_layout([make_group(CHUNKED, 4, chunk=8, pool_id=0), make_group(FULL, 4, pool_id=0),
                      make_group(SLIDING, 2, window=6, pool_id=1),
                      make_group(RECURRENT, 4, num_state_blocks=2, pool_id=1)],
                     [25, 32], max_model_len=36, in_flight_tokens=4), 36, 2, 3),
    # full b=4, L=32 needs 8; 8 blocks -> 7 usable: none fits. wrong: null block counted, 8 // 8 = 1.
    Case("too small for one", make_layout([make_group(FULL, 4)], [8], max_model_len=32), 32, 0, 1),
    # the null block alone: 0 usable. wrong: 1 // 1 with a one-token request (cdiv(1, 4) = 1).
    Case("null block only", make_layout([make_group(FULL, 4)], [1], max_model_len=32), 1, 0, 1),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_probe_counts_by_hand(case: Case) -> None:
    count = probe_capacity(case.layout, case.seq_len)
    assert count == case.expected
    assert count != case.wrong  # the table's expectations are not vacuous


def test_probe_rejects_a_request_without_tokens() -> None:
    with pytest.raises(ValueError, match="max_model_len"):
        probe_capacity(make_layout([make_group(FULL, 4)], [24], max_model_len=32), 0)
