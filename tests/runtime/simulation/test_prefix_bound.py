"""The infinite-cache bound, on hand-built requests (4-token blocks)."""

from __future__ import annotations

from array import array

import pytest

from hkv.runtime.simulation.prefix_bound import prefix_bound
from hkv.runtime.simulation.workload_request import WorkloadRequest


def _req(name: str, prompt: list[int], output: list[int]) -> WorkloadRequest:
    return WorkloadRequest(name, 0.0, array("q", prompt), array("q", output))


def test_shared_prefix_blocks_are_hit_once_seen() -> None:
    shared = list(range(100, 108))  # two full blocks of 4
    workload = [
        _req("a", shared + [1, 2, 3], [9]),  # 11 tokens: nothing seen yet -> 0
        _req("b", shared + [4, 5], [9]),  # 10 tokens: both shared blocks -> 8
        _req("c", [7, 7, 7, 7, 7], [9]),  # unrelated -> 0
    ]
    bound = prefix_bound(workload, 4)
    assert (bound.num_prompt_tokens, bound.num_hit_tokens) == (11 + 10 + 5, 8)
    assert bound.hit_rate == pytest.approx(8 / 26)


def test_the_last_prompt_token_is_never_hit_and_outputs_count() -> None:
    first = [1, 2, 3, 4, 5, 6, 7, 8]
    workload = [
        _req("a", first, [10, 11, 12, 13]),
        _req("resend", first, [1]),  # 8 tokens: at most (8 - 1) // 4 = 1 block -> 4
        _req("next-turn", first + [10, 11, 12, 13] + [20], [1]),  # prompt + output resent: 3 blocks -> 12
    ]
    bound = prefix_bound(workload, 4)
    assert bound.num_hit_tokens == 4 + 12
    assert bound.num_prompt_tokens == 8 + 8 + 13


def test_a_prefix_differing_in_its_first_block_hits_nothing() -> None:
    workload = [_req("a", [1, 2, 3, 4, 5, 6, 7, 8, 9], [1]), _req("b", [0, 2, 3, 4, 5, 6, 7, 8, 9], [1])]
    assert prefix_bound(workload, 4).num_hit_tokens == 0  # chain keys: block 2 differs through block 1
