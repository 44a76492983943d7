"""Scheduler: budget, chunked prefill, admission, preemption, finishing, step outputs."""

from __future__ import annotations

import pytest
from hkv.runtime import (
    BlockTables,
    CacheConfig,
    EvictionPolicy,
    KVCacheManager,
    OutOfBlocksError,
    Request,
    RequestStatus,
    RequestTooLongError,
    Scheduler,
    SchedulerConfig,
    SchedulerOutput,
)
from rt_harness import FakeRunner, drive
from rt_layouts import FULL, RECURRENT, SLIDING, make_group, make_layout, slot_mapping


def step(scheduler: Scheduler, token: int = 7) -> SchedulerOutput:
    output = scheduler.schedule()
    scheduler.kv.check_integrity()
    scheduler.update_from_output(output, {e.request_id: token for e in output.scheduled if e.emits_token})
    scheduler.kv.check_integrity()
    return output


def shape(output: SchedulerOutput) -> list[tuple[str, int, int]]:
    return [(e.request_id, e.positions.start, e.num_tokens) for e in output.scheduled]


def full_scheduler(num_blocks: int = 40, budget: int = 4, num_seqs: int = 4, **config) -> Scheduler:
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [num_blocks], max_model_len=32,
                                    in_flight_tokens=budget), CacheConfig(**config))
    return Scheduler(kv, SchedulerConfig(max_num_batched_tokens=budget, max_num_seqs=num_seqs))


def test_chunked_prefill_then_decode_then_finish() -> None:
    scheduler = full_scheduler(budget=4)
    request = Request("a", list(range(10)), max_output_len=2)
    scheduler.add_request(request)
    outputs = [step(scheduler) for _ in range(5)]
    # Prefill 4 + 4 + 2 (the last chunk samples the first token), then one decode.
    assert [shape(o) for o in outputs[:4]] == [[("a", 0, 4)], [("a", 4, 4)], [("a", 8, 2)], [("a", 10, 1)]]
    assert [e.emits_token for o in outputs[:4] for e in o.scheduled] == [False, False, True, True]
    assert request.status is RequestStatus.FINISHED and list(request.token_ids[10:]) == [7, 7]
    assert outputs[4].finished_request_ids == ("a",) and outputs[4].is_empty
    assert scheduler.kv.usage == 0.0


def test_budget_goes_to_running_requests_first() -> None:
    scheduler = full_scheduler(budget=6)
    scheduler.add_request(Request("a", list(range(5)), max_output_len=3))
    assert shape(step(scheduler)) == [("a", 0, 5)]
    scheduler.add_request(Request("b", list(range(20, 30)), max_output_len=3))
    assert shape(step(scheduler)) == [("a", 5, 1), ("b", 0, 5)]  # decode 1, then b gets 5
    assert shape(step(scheduler)) == [("a", 6, 1), ("b", 5, 5)]


def test_no_request_gets_more_than_the_layouts_in_flight_tokens() -> None:
    # The Layout's T is a contract (hkv's layout: its prefill chunk): a step of 8 tokens with
    # T = 3 gives each prompt at most 3, and fills the rest of the budget with the next request.
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [40], max_model_len=32, in_flight_tokens=3),
                        CacheConfig())
    scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=8, max_num_seqs=4))
    scheduler.add_request(Request("a", list(range(7)), max_output_len=2))
    scheduler.add_request(Request("b", list(range(20, 27)), max_output_len=2))
    assert shape(step(scheduler)) == [("a", 0, 3), ("b", 0, 3)]
    assert shape(step(scheduler)) == [("a", 3, 3), ("b", 3, 3)]
    assert shape(step(scheduler)) == [("a", 6, 1), ("b", 6, 1)]


def test_sequence_cap() -> None:
    scheduler = full_scheduler(budget=16, num_seqs=2)
    for i in range(3):
        scheduler.add_request(Request(f"r{i}", [i] * 3, max_output_len=5))
    assert [e.request_id for e in step(scheduler).scheduled] == ["r0", "r1"]


def test_admission_waits_for_the_whole_prompt() -> None:
    """7 usable blocks of 2 tokens: a (10 tokens) takes 5; b (6 tokens) needs 3 > 2 left."""
    scheduler = full_scheduler(num_blocks=8, budget=16)
    a, b = Request("a", list(range(10)), 1), Request("b", list(range(50, 56)), 1)
    scheduler.add_request(a)
    scheduler.add_request(b)
    assert shape(step(scheduler)) == [("a", 0, 10)]  # a finishes at once (1 output token)
    assert shape(step(scheduler)) == [("b", 0, 6)]


def test_preemption_of_the_newest_and_recompute_from_cache() -> None:
    """6 usable blocks of 2. a and b (4 tokens each) take 2 blocks each; decoding they grow until
    a's allocation fails: b (newest) is preempted, freed, and later re-admitted with its cached
    prefix as a hit."""
    scheduler = full_scheduler(num_blocks=7, budget=8)
    a, b = Request("a", list(range(4)), 5), Request("b", list(range(40, 44)), 5)
    scheduler.add_request(a)
    scheduler.add_request(b)
    outputs = [step(scheduler) for _ in range(3)]
    # Step 1: 4 + 4 tokens (4 blocks). Step 2: decode (tokens 4): 2 more blocks -> pool full.
    # Step 3: a's token 5 fits in its block; b's too. Step 4: a needs a 4th block -> b preempted.
    assert all(not o.preempted_request_ids for o in outputs)
    output = step(scheduler)
    assert output.preempted_request_ids == ("b",) and shape(output) == [("a", 6, 1)]
    assert b.status is RequestStatus.PREEMPTED and b.num_computed_tokens == 0
    assert scheduler.num_preemptions == 1
    while scheduler.has_unfinished_requests:
        step(scheduler)
    assert a.status is RequestStatus.FINISHED and a.num_output_tokens == 5
    assert b.status is RequestStatus.FINISHED and b.num_output_tokens == 5
    assert scheduler.kv.stats().num_hit_tokens > 0  # b's recompute hit its own cached prefix


def test_recurrent_checkpoints_align_prefill_chunks() -> None:
    groups = [make_group(FULL, 4), make_group(RECURRENT, 4)]
    for caching, expected in [(True, [("a", 0, 8), ("a", 8, 2)]), (False, [("a", 0, 10)])]:
        kv = KVCacheManager(make_layout(groups, [20], max_model_len=32, in_flight_tokens=16),
                            CacheConfig(enable_caching=caching))
        scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=16))
        scheduler.add_request(Request("a", list(range(10)), 1))
        assert [shape(step(scheduler))[0] for _ in range(len(expected))] == expected


def test_outputs_carry_tables_and_increments() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 2), make_group(SLIDING, 2, window=3)], [20],
                                    max_model_len=32))
    scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=8))
    request = Request("a", list(range(3)), 4)
    scheduler.add_request(request)
    tables = BlockTables((2, 2))
    first = scheduler.schedule()
    [entry] = first.scheduled
    assert entry.is_new and entry.block_ids == ((1, 2), (3, 4)) and tuple(entry.token_ids) == (0, 1, 2)
    tables.apply(first)
    scheduler.update_from_output(first, {"a": 9})
    second = scheduler.schedule()  # token 3 at position 3: still in block 2
    assert not second.scheduled[0].is_new and second.scheduled[0].block_ids == ((), ())
    scheduler.update_from_output(second, {"a": 9})
    third = scheduler.schedule()  # position 4: one new block per group
    assert third.scheduled[0].block_ids == ((5,), (6,))
    tables.apply(third)
    assert tables.slot_mapping("a", 0, range(4, 5)) == slot_mapping(kv, request, 0, range(4, 5)) == [10]
    assert tables.table("a", 1)[-1] == 6


def test_a_request_that_cannot_fit_alone_raises() -> None:
    scheduler = full_scheduler(num_blocks=3, budget=16)  # 2 usable blocks = 4 tokens
    scheduler.add_request(Request("big", list(range(6)), 1))
    with pytest.raises(OutOfBlocksError, match="big"):
        scheduler.schedule()


def test_prompt_longer_than_max_model_len_is_rejected() -> None:
    with pytest.raises(RequestTooLongError):
        full_scheduler().add_request(Request("long", list(range(40)), 1))


def test_runner_reads_its_own_tokens_everywhere() -> None:
    groups = [make_group(FULL, 2), make_group(SLIDING, 2, window=3), make_group(RECURRENT, 2)]
    kv = KVCacheManager(make_layout(groups, [40], max_model_len=32, in_flight_tokens=6))
    scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=6, max_num_seqs=3))
    shared = list(range(500, 510))
    requests = [Request(f"r{i}", shared + [i] * (i + 1), 3) for i in range(5)]
    runner = FakeRunner(kv)
    drive(scheduler, requests, runner=runner)
    assert runner.num_checked_hits >= 3 and kv.stats().num_hit_tokens >= 24


@pytest.mark.parametrize(("policy", "expected_hit_tokens", "expected_reserved"), [
    (EvictionPolicy.GROUP_AWARE, 6, 3),  # the waiting b's hit is reserved: a's growth evicts t's
    (EvictionPolicy.LRU, 2, 0),  # LRU evicts the oldest, s's last 2 blocks: b hits s's first
])
def test_a_blocked_head_keeps_its_hit(policy: EvictionPolicy, expected_hit_tokens: int,
                                      expected_reserved: int) -> None:
    """11 usable blocks of 2. s (6 tokens) then t (6 tokens) run and finish: 3 cached blocks
    each, s's older. a (10 tokens, 5 outputs) takes the 5 uncached blocks; b (s's 6 tokens + 8)
    would hit s's 3 blocks but needs 4 more, and only t's 3 are left: it waits. a's 4 decode
    steps (tokens 10..13) need 2 more blocks, evicted from s's or t's."""
    scheduler = full_scheduler(num_blocks=12, budget=32, eviction_policy=policy)
    for name, base in (("s", 0), ("t", 100)):
        scheduler.add_request(Request(name, list(range(base, base + 6)), 1))
        step(scheduler)
    a, b = Request("a", list(range(200, 210)), 5), Request("b", [*range(6), *range(60, 68)], 1)
    scheduler.add_request(a)
    scheduler.add_request(b)
    assert shape(step(scheduler)) == [("a", 0, 10)]
    assert scheduler.kv.pools[0].num_reserved_blocks == expected_reserved
    while a.status is not RequestStatus.FINISHED:
        step(scheduler)
    step(scheduler)  # b is admitted, computes the tokens past its hit and samples its one token
    assert b.status is RequestStatus.FINISHED and scheduler.kv.stats().num_hit_tokens == expected_hit_tokens
    assert scheduler.kv.pools[0].num_reserved_blocks == 0  # nothing waits any more
