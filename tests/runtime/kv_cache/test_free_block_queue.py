"""FreeBlockQueue: order after each operation (table-driven) and integrity checking."""

from __future__ import annotations

import pytest
from hkv.runtime.kv_cache.free_block_queue import FreeBlockQueue, FreeSegment
from rt_pool import append, append_to, appendleft, popleft, remove

OPS = {"popleft": popleft, "append": append, "appendleft": appendleft, "remove": remove,
       "move_to_front": lambda queue, block_id: queue.move_to_front(block_id)}

# Queue over blocks 1..5 of a 6-block pool (block 0, the null block, is never queued).
CASES = [
    # (operations, expected front-to-back order)
    ([], [1, 2, 3, 4, 5]),
    ([("popleft", None)], [2, 3, 4, 5]),
    ([("popleft", None), ("append", 1)], [2, 3, 4, 5, 1]),
    ([("popleft", None), ("appendleft", 1)], [1, 2, 3, 4, 5]),
    ([("remove", 3)], [1, 2, 4, 5]),
    ([("remove", 1), ("remove", 5)], [2, 3, 4]),
    ([("move_to_front", 4)], [4, 1, 2, 3, 5]),
    ([("move_to_front", 1)], [1, 2, 3, 4, 5]),
    ([("remove", 2), ("append", 2), ("remove", 4), ("appendleft", 4)], [4, 1, 3, 5, 2]),
    ([("popleft", None)] * 5, []),
    ([("popleft", None)] * 5 + [("append", 3), ("appendleft", 5)], [5, 3]),
]


@pytest.mark.parametrize(("ops", "expected"), CASES)
def test_order_after_operations(ops: list[tuple[str, int | None]], expected: list[int]) -> None:
    queue = FreeBlockQueue(6, range(1, 6))
    for name, arg in ops:
        if arg is None:
            OPS[name](queue)
        else:
            OPS[name](queue, arg)
        queue.check_integrity()
    assert list(queue) == expected
    assert len(queue) == len(expected)
    assert all((b in queue) == (b in expected) for b in range(6))


def test_popleft_returns_front() -> None:
    queue = FreeBlockQueue(4, [3, 1, 2])
    assert [popleft(queue), popleft(queue), popleft(queue)] == [3, 1, 2]


@pytest.mark.parametrize(("name", "arg"), [("append", 1), ("appendleft", 2), ("remove", 0)])
def test_misuse_raises(name: str, arg: int) -> None:
    queue = FreeBlockQueue(4, range(1, 4))
    with pytest.raises(AssertionError):
        OPS[name](queue, arg)


def test_pop_from_empty_raises() -> None:
    queue = FreeBlockQueue(2, range(1, 2))
    popleft(queue)
    with pytest.raises(AssertionError, match="pop of 1 from a free queue of 0"):
        popleft(queue)


def test_integrity_detects_a_block_queued_twice() -> None:
    queue = FreeBlockQueue(6, range(1, 6))
    queue.extend([3])  # unchecked: 3 is also in the front part
    with pytest.raises(AssertionError, match="free queue"):
        queue.check_integrity()


def test_integrity_detects_an_id_out_of_range() -> None:
    queue = FreeBlockQueue(6, range(1, 6))
    queue.extendleft([9])  # unchecked
    with pytest.raises(AssertionError, match="free queue"):
        queue.check_integrity()


def test_front_inserts_and_pops_are_bulk_list_operations() -> None:
    """The front part is one list used as a stack: appendleft pushes, pops slice its end."""
    queue = FreeBlockQueue(1000, range(1, 1000))
    assert queue.popleft_n(3) == [1, 2, 3] and queue.num_front == 996
    queue.extendleft([3, 2, 1])  # the last one ends up first
    assert list(queue)[:4] == [1, 2, 3, 4] and queue.num_front == 999
    queue.check_integrity()


def test_move_many_to_front_equals_one_by_one() -> None:
    one, many = FreeBlockQueue(8, range(1, 8)), FreeBlockQueue(8, range(1, 8))
    for block_id in (5, 2, 7, 2):
        one.move_to_front(block_id)
    many.move_many_to_front([5, 2, 7, 2])
    assert list(one) == list(many) == [2, 7, 5, 1, 3, 4, 6]
    many.check_integrity()


def test_popleft_n() -> None:
    queue = FreeBlockQueue(6, range(1, 6))
    assert queue.popleft_n(2) == [1, 2] and list(queue) == [3, 4, 5]
    assert queue.popleft_n(3) == [3, 4, 5] and len(queue) == 0
    queue.check_integrity()
    with pytest.raises(AssertionError):
        queue.popleft_n(1)


def test_protected_segment_goes_last() -> None:
    """Queue over 1..5; 2 and 4 are protected: pops take the main segment first."""
    queue = FreeBlockQueue(6, [1, 3, 5])
    append_to(queue, FreeSegment.PROTECTED, 2)
    append_to(queue, FreeSegment.PROTECTED, 4)
    appendleft(queue, 0)
    queue.check_integrity()
    assert list(queue) == [0, 1, 3, 5, 2, 4] and queue.is_protected(2) and not queue.is_protected(3)
    assert queue.popleft_n(5) == [0, 1, 3, 5, 2]  # crosses into the protected segment
    queue.check_integrity()
    append(queue, 1)  # main segment: ahead of the remaining protected block
    assert list(queue) == [1, 4]
    queue.unprotect([4, 1])  # 4 moves to the main segment's back; 1 is not protected
    assert list(queue) == [1, 4] and not queue.is_protected(4)
    queue.check_integrity()


def test_pops_cross_from_front_to_main_to_protected() -> None:
    queue = FreeBlockQueue(10, [1, 2])
    queue.extend([5, 6])
    queue.extend_segment(FreeSegment.PROTECTED, [8, 9])
    appendleft(queue, 3)
    assert list(queue) == [3, 1, 2, 5, 6, 8, 9] and queue.num_front == 3 and queue.num_protected == 2
    assert queue.popleft_n(4) == [3, 1, 2, 5]
    assert queue.popleft_n(2) == [6, 8]
    assert list(queue) == [9] and queue.count_protected([9, 8, 1]) == 1
    queue.check_integrity()


def test_cold_segment_sits_between_front_and_main() -> None:
    """front [3] | cold [7, 4] | main [5] | protected [8]: pops and removals see that order."""
    queue = FreeBlockQueue(10, [])
    queue.extend([5])
    queue.extend_segment(FreeSegment.PROTECTED, [8])
    queue.extend_segment(FreeSegment.COLD, [7, 4])
    appendleft(queue, 3)
    queue.check_integrity()
    assert list(queue) == [3, 7, 4, 5, 8] and len(queue) == 5 and 4 in queue
    remove(queue, 7)  # a hit on a cold block
    assert list(queue) == [3, 4, 5, 8]
    assert queue.popleft_n(3) == [3, 4, 5]
    assert list(queue) == [8] and 4 not in queue
    queue.extend_segment(FreeSegment.COLD, [4, 2])
    queue.remove_many([2])
    assert queue.popleft_n(2) == [4, 8]
    queue.check_integrity()


@pytest.mark.parametrize(("reserve", "expected", "expected_reserved"), [
    # Queue: front [1] | cold [2] | main [3, 4, 5] | protected [6]; reserve() then pop order.
    ([5, 3], [1, 2, 4, 5, 3, 6], [5, 3]),
    ([2, 4], [1, 3, 5, 2, 4, 6], [2, 4]),  # a cold block can be reserved
    ([6, 1, 9, 4, 4], [1, 2, 3, 5, 4, 6], [4]),  # protected, front, unqueued, repeats: skipped
    ([], [1, 2, 3, 4, 5, 6], []),
])
def test_reserved_segment_between_main_and_protected(reserve: list[int], expected: list[int],
                                                     expected_reserved: list[int]) -> None:
    queue = FreeBlockQueue(10, [1])
    queue.extend_segment(FreeSegment.COLD, [2])
    queue.extend([3, 4, 5])
    queue.extend_segment(FreeSegment.PROTECTED, [6])
    queue.reserve(reserve)
    queue.check_integrity()
    assert list(queue) == expected and queue.num_reserved == len(expected_reserved)
    assert [b for b in range(10) if queue.is_reserved(b)] == sorted(expected_reserved)
    assert queue.popleft_n(len(expected)) == expected


def test_reserve_again_returns_the_others_to_the_main_back() -> None:
    queue = FreeBlockQueue(10, [])
    queue.extend([1, 2, 3, 4, 5])
    queue.reserve([5, 3, 1])
    assert list(queue) == [2, 4, 5, 3, 1]
    remove(queue, 3)  # a hit on a reserved block
    queue.reserve([2, 1])  # 5 is no longer reserved: back of main, ahead of the reserved ones
    assert list(queue) == [4, 5, 2, 1] and queue.num_reserved == 2
    queue.reserve([])
    assert list(queue) == [4, 5, 2, 1] and queue.num_reserved == 0
    queue.check_integrity()
