"""The fields of a SimulationReport that an optimization must leave unchanged."""

from __future__ import annotations

from hkv.runtime.simulation.simulation_report import SimulationReport


def outcome_of(report: SimulationReport) -> dict[str, object]:
    return {
        "num_finished": report.num_finished,
        "num_steps": report.num_steps,
        "num_tokens_processed": report.num_tokens_processed,
        "num_preemptions": report.num_preemptions,
        "num_hit_tokens": report.num_hit_tokens,
        "num_evictions": report.num_evictions,
        "peak_running": report.peak_running,
        "simulated_s": round(report.simulated_s, 6),
        "early_released_blocks": [g.early_released_blocks for g in report.groups],
        "peak_blocks": [g.peak_blocks for g in report.groups],
    }
