"""Replay a workload through the Simulator twice, stepping every request and with decode runs,
integrity checked after every step: the two reports must be equal (decode runs change how fast a
replay goes, never what it reports)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict

from hkv.planner.layout import Layout
from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy
from hkv.runtime.scheduler.scheduler import SchedulerConfig
from hkv.runtime.simulation.simulator import SimulationConfig, Simulator
from hkv.runtime.simulation.workload_request import WorkloadRequest


def replay_both_ways(layout: Layout, workload: Callable[[], Sequence[WorkloadRequest]],
                     scheduler: SchedulerConfig, eviction: EvictionPolicy) -> dict[str, object]:
    """The report (wall time left out) both replays gave; asserts they are equal and that the
    second one took decode runs."""
    reports = []
    for decode_runs in (False, True):
        config = SimulationConfig(scheduler, CacheConfig(eviction_policy=eviction), check_integrity_every=1,
                                  decode_runs=decode_runs)
        simulator = Simulator(layout, workload(), config)
        simulator.run()
        reports.append({k: v for k, v in asdict(simulator.report()).items() if k != "wall_s"})
    assert reports[0] == reports[1]
    assert simulator.num_decode_run_steps > 0, "no decode run: nothing compared"
    return reports[0]
