"""Rich rendering of simulation reports (side by side when several layouts ran)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from hkv.runtime.simulation.metrics.percentiles import Percentiles
from hkv.runtime.simulation.simulation_report import SimulationReport
from hkv.runtime.simulation.split_sweep import SplitTrial


def render_simulation(reports: list[SimulationReport], console: Console) -> None:
    builds = sorted({r.runtime_build for r in reports})  # one in practice: the installed build
    table = Table(title=f"simulation ({', '.join(builds)} build)")
    table.add_column("", no_wrap=True)
    for r in reports:
        table.add_column(r.layout + (" (interrupted)" if r.interrupted else ""), justify="right")
    rows = [
        ("requests finished", lambda r: f"{r.num_finished:,} / {r.num_requests:,}"),
        ("finished per simulated s", lambda r: f"{r.timing.finished_per_s:,.2f}"),
        ("steps", lambda r: f"{r.num_steps:,}"),
        ("tokens processed", lambda r: f"{r.num_tokens_processed:,}"),
        ("running peak / mean", lambda r: f"{r.peak_running} / {r.mean_running:.1f}"),
        ("preemptions", lambda r: f"{r.num_preemptions:,}"),
        ("eviction policy", lambda r: r.eviction_policy),
        ("prefix hit rate (first admissions)", lambda r: f"{r.hits.first_admission_hit_rate:.1%}"),
        ("hits found on re-admission", lambda r: f"{r.hits.readmission_hit_share:.1%} of hit tokens"),
        ("hit rate, all admissions", lambda r: f"{r.prefix_hit_rate:.1%}"),
        ("evicted tokens (stack) / blocks", lambda r: f"{r.evictions.evicted_tokens:,.0f} / {r.num_evictions:,}"),
        ("KV usage mean / peak", lambda r: f"{r.mean_kv_usage:.1%} / {r.peak_kv_usage:.1%}"),
        ("queueing delay p50/p90/p99", lambda r: _seconds(r.timing.queueing_delay_s)),
        ("TTFT proxy p50/p90/p99", lambda r: _seconds(r.timing.ttft_s)),
        ("latency p50/p90/p99", lambda r: _seconds(r.timing.latency_s)),
        ("simulated time", lambda r: f"{r.simulated_s:,.1f} s"),
        ("wall time", lambda r: f"{r.wall_s:,.1f} s"),
    ]
    if any(r.evictions.evicted_states for r in reports):
        rows.insert(10, ("evicted states (stack)", lambda r: f"{r.evictions.evicted_states:,.0f}"))
    for label, cell in rows:
        table.add_row(label, *(cell(r) for r in reports))
    console.print(table)
    for detail in sorted({r.step_time_detail for r in reports}):  # one per run in practice
        console.print(f"step times: {detail}")
    for r in reports:
        groups = Table(title=f"{r.layout}: blocks in use per group")
        for col in ("#", "kind", "layers", "peak", "mean", "released early", "evicted"):
            groups.add_column(col, justify="left" if col == "kind" else "right")
        for i, g in enumerate(r.groups):
            groups.add_row(str(i), g.kind, str(g.num_layers), f"{g.peak_blocks:,}", f"{g.mean_blocks:,.1f}",
                           f"{g.early_released_blocks:,}", f"{g.evicted_blocks:,}")
        console.print(groups)


def _seconds(p: Percentiles) -> str:
    """p50 / p90 / p99 in the unit that suits the p99 (simulated time)."""
    if p.p50 is None or p.p90 is None or p.p99 is None:
        return "-"
    scale, unit = (1e3, "ms") if p.p99 < 1.0 else (1.0, "s")
    return f"{p.p50 * scale:,.3g} / {p.p90 * scale:,.3g} / {p.p99 * scale:,.3g} {unit}"


def render_split_sweep(trials: list[SplitTrial], best: SplitTrial, console: Console) -> None:
    table = Table(title="partitioned pool split sweep (lower simulated time is better)")
    for col in ("EXPECTED_AVERAGE_SEQ_LENGTH", "simulated s", "steps", "preemptions", "mean running", "hit rate"):
        table.add_column(col, justify="right")
    for t in trials:
        mark = " *" if t is best else ""
        table.add_row(f"{t.expected_avg_seq_len:,}{mark}", f"{t.simulated_s:,.1f}", f"{t.num_steps:,}",
                      f"{t.num_preemptions:,}", f"{t.mean_running:.1f}", f"{t.prefix_hit_rate:.1%}")
    console.print(table)
    console.print(f"best: EXPECTED_AVERAGE_SEQ_LENGTH={best.expected_avg_seq_len}")
