"""The simulator pulls its workload lazily: a generator replays like the list it yields, and a
request is not pulled before simulated time reaches the previous one's arrival."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import asdict

from rt_layouts import FULL, make_group, make_layout

from hkv.runtime.scheduler.scheduler import SchedulerConfig
from hkv.runtime.simulation.simulator import SimulationConfig, Simulator
from hkv.runtime.simulation.workload_request import WorkloadRequest


def _workload() -> list[WorkloadRequest]:
    # Three 8-token prompts, 2 output tokens each; the third is the second's next turn (depends_on 1).
    def toks(start: int, n: int) -> array:
        return array("q", range(start, start + n))
    return [WorkloadRequest("a", 0.0, toks(1, 8), toks(100, 2)),
            WorkloadRequest("b", 0.5, toks(20, 8), toks(200, 2)),
            WorkloadRequest("c", 0.6, toks(20, 8) + toks(200, 2) + toks(40, 4), toks(300, 2), depends_on=1)]


def _config() -> SimulationConfig:
    return SimulationConfig(SchedulerConfig(max_num_batched_tokens=16, max_num_seqs=4), check_integrity_every=1)


def _layout():
    return make_layout([make_group(FULL, 4)], [33])


def test_a_generator_replays_like_the_list() -> None:
    listed = Simulator(_layout(), _workload(), _config()).run()
    streamed = Simulator(_layout(), iter(_workload()), _config()).run()
    drop = {"wall_s"}
    assert {k: v for k, v in asdict(listed).items() if k not in drop} == \
           {k: v for k, v in asdict(streamed).items() if k not in drop}
    assert streamed.num_requests == 3 and streamed.num_finished == 3
    assert streamed.num_prompt_tokens == 8 + 8 + 14 and streamed.num_output_tokens == 6


def test_requests_are_pulled_one_ahead_of_simulated_time() -> None:
    pulled_at: list[float] = []
    sim: Simulator

    def source() -> Iterator[WorkloadRequest]:
        for wr in _workload():
            pulled_at.append(sim.now_s)
            yield wr

    sim = Simulator(_layout(), source(), _config())
    sim.run()
    # "a" and "b" are pulled at 0 (b to learn its arrival); "c" only once time passed b's 0.5 s.
    assert pulled_at[:2] == [0.0, 0.0]
    assert pulled_at[2] >= 0.5
