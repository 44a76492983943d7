"""TensorBlockTables against the pure-Python BlockTables (the oracle), fed the same steps."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hkv.runtime.live.block_tables import BlockTables  # noqa: E402
from hkv.runtime.live.tensor_block_tables import TensorBlockTables  # noqa: E402
from hkv.runtime.scheduler.scheduler_output import ScheduledRequest, SchedulerOutput  # noqa: E402

BLOCK_SIZES = (4, 2)  # two groups


def entry(request_id: str, positions: range, is_new: bool, *block_ids: tuple[int, ...]) -> ScheduledRequest:
    return ScheduledRequest(request_id, (0,) * len(positions), positions, is_new, tuple(block_ids), (), True)


def step(step_id: int, *scheduled: ScheduledRequest, finished: tuple[str, ...] = (),
         preempted: tuple[str, ...] = ()) -> SchedulerOutput:
    return SchedulerOutput(step_id, scheduled, sum(e.num_tokens for e in scheduled), preempted, finished)


def steps() -> list[SchedulerOutput]:
    """Admissions, appends, a finish, a preemption and re-admission, 20 requests (past the 16
    initial rows) and a table of 40 entries (past the 16 initial columns)."""
    out = [
        step(0, entry("a", range(0, 6), True, (1, 2), (1, 2, 3)), entry("b", range(0, 3), True, (3,), (4, 5))),
        step(1, entry("a", range(6, 9), False, (4,), (6, 7)), entry("b", range(3, 4), False, (), (8,))),
        step(2, entry("b", range(4, 5), False, (5,), ()), finished=("a",)),
        # c takes a's freed row: its padding must read 0, not a's old entries
        step(3, entry("c", range(0, 1), True, (6,), (9,)), entry("b", range(5, 6), False, (), (10,))),
        step(4, entry("c", range(1, 2), False, (), ()), preempted=("b",)),
        step(5, entry("b", range(0, 7), True, (7, 8), (11, 12, 13, 14))),
    ]
    many = [entry(f"r{i}", range(0, 1), True, (20 + i,), (40 + i,)) for i in range(18)]
    out.append(step(6, *many))
    out.append(step(7, entry("c", range(2, 160), False, tuple(range(100, 140)), tuple(range(200, 279)))))
    return out


def test_tables_and_slots_equal_the_python_tables() -> None:
    oracle, tensors = BlockTables(BLOCK_SIZES), TensorBlockTables(BLOCK_SIZES)
    for output in steps():
        oracle.apply(output)
        tensors.apply(output)
        ids = [e.request_id for e in output.scheduled]
        rows = tensors.step_rows(ids)
        for g in range(len(BLOCK_SIZES)):
            selected = tensors.step_table(rows, g)
            for i, e in enumerate(output.scheduled):
                expected = oracle.table(e.request_id, g)
                assert tensors.table(e.request_id, g) == expected
                padded = expected + [0] * (selected.shape[1] - len(expected))  # the null block
                assert selected[i].tolist() == padded, (output.step_id, e.request_id, g)
                assert tensors.slot_mapping(e.request_id, g, e.positions) == \
                    oracle.slot_mapping(e.request_id, g, e.positions)
            assert selected.dtype == torch.int32
    assert tensors.table("c", 0)[:2] == [6, 100] and len(tensors.table("c", 1)) == 80  # 1 + 79 entries


def test_finished_and_preempted_requests_are_forgotten() -> None:
    tensors = TensorBlockTables(BLOCK_SIZES)
    for output in steps()[:5]:
        tensors.apply(output)
    for gone in ("a", "b"):  # a finished at step 2, b preempted at step 4
        with pytest.raises(KeyError):
            tensors.table(gone, 0)
    assert tensors.table("c", 1) == [9]
