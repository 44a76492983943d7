"""`hkv simulate --svg FILE`: the replays' time series as an SVG picture, drawn by hand.

Four panels over simulated time, one line per layout: running requests, waiting requests, KV use
(share of usable blocks in use) and the first-admission prefix hit rate so far (the per-interval
rate, in the JSON, is too noisy to draw when few requests arrive per interval). The points are each report's
`time_series` (at most about 1,000 per layout, see runtime/simulation/metrics/time_series.py).
Plain SVG text: no plotting library. No PNG: that needs a rasterizer, a dependency hkv lacks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import floor, log10
from pathlib import Path
from xml.sax.saxutils import escape

from typing import TYPE_CHECKING

from hkv.cli.errors import UserError
from hkv.cli.plan_svg import checked_svg_path

if TYPE_CHECKING:  # the runtime loads only when a simulation runs
    from hkv.runtime.simulation.metrics.time_series import TimeSeries
    from hkv.runtime.simulation.simulation_report import SimulationReport

WIDTH = 960
LEFT, RIGHT = 80, 24  # plot margins (y labels on the left)
TOP = 70  # title and legend
PANEL_H, PANEL_GAP = 150, 56  # a panel's plot height; room below it for x labels and the next title
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
DASHES = ("", "7 3", "2 2", "9 3 2 3")  # layouts often coincide: a dash pattern keeps each line visible
NUM_TICKS = 5


@dataclass(frozen=True)
class Panel:
    title: str
    values: Callable[[TimeSeries], Sequence[float | None]]
    is_share: bool  # a 0-1 share: % labels, the axis at most 100 %; else a count


PANELS = (
    Panel("running requests", lambda s: s.running, False),
    Panel("waiting requests", lambda s: s.waiting, False),
    Panel("KV use (share of usable blocks in use)", lambda s: s.kv_usage, True),
    Panel("prefix hit rate of first admissions, so far", lambda s: s.hit_rate, True),
)


def checked_simulation_svg_path(svg: str | None, *, probe: bool, sweep_split: bool) -> Path | None:
    """The --svg path, None without one; checked before anything runs (plan_svg's checks).
    UserError with --probe-capacity or --sweep-split, which draw no time series."""
    if svg is not None and (probe or sweep_split):
        raise UserError("--svg draws a replay's time series; --probe-capacity and --sweep-split have none: "
                        "drop --svg, or replay a --workload or --trace without them")
    return checked_svg_path(svg, sweep=False, emit=False)


def simulation_svg(reports: Sequence[SimulationReport], title: str) -> str:
    """The SVG document for `reports` (one line per layout in every panel)."""
    end_s = max((t for r in reports for t in r.time_series.t_s), default=0.0)
    x_max = _nice_ceiling(end_s)
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + len(PANELS) * (PANEL_H + PANEL_GAP)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>']
    for i, r in enumerate(reports):  # legend
        x = LEFT + i * 150
        out.append(f'<line x1="{x}" y1="42" x2="{x + 24}" y2="42" {_stroke(i)} stroke-width="2.5"/>'
                   f'<text x="{x + 30}" y="46">{escape(r.layout)}</text>')
    for p, panel in enumerate(PANELS):
        top = TOP + p * (PANEL_H + PANEL_GAP) + 18
        series = [panel.values(r.time_series) for r in reports]
        y_max = _nice_ceiling(max((v for s in series for v in s if v is not None), default=0.0))
        if panel.is_share:
            y_max = min(1.0, y_max)

        def x_of(t_s: float) -> float:
            return LEFT + plot_w * t_s / x_max

        def y_of(value: float, top: int = top, y_max: float = y_max) -> float:
            return top + PANEL_H * (1.0 - value / y_max)

        out.append(f'<text x="{LEFT}" y="{top - 6}" font-weight="bold">{escape(panel.title)}</text>')
        out.append(f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL_H}" fill="none" stroke="#999"/>')
        for k in range(NUM_TICKS + 1):
            value = y_max * k / NUM_TICKS
            y = y_of(value)
            label = f"{value * 100:.3g}%" if panel.is_share else f"{value:,.4g}"
            out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#eee"/>'
                       f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
            t_s = x_max * k / NUM_TICKS
            out.append(f'<text x="{x_of(t_s):.1f}" y="{top + PANEL_H + 16}" text-anchor="middle">'
                       f'{t_s:,.4g} s</text>')
        for i, (r, values) in enumerate(zip(reports, series, strict=True)):
            for run in _runs(r.time_series.t_s, values):
                points = " ".join(f"{x_of(t):.1f},{y_of(v):.1f}" for t, v in run)
                out.append(f'<polyline points="{points}" fill="none" {_stroke(i)} stroke-width="1.5"/>')
    out.append(f'<text x="{WIDTH - RIGHT}" y="{height - 12}" text-anchor="end" fill="#666">'
               'simulated time; step times: see the report (an estimate)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def save_simulation_svg(reports: Sequence[SimulationReport], path: Path, title: str) -> None:
    """Write the picture at `path` whole or not at all (a temporary file renamed over it).
    UserError when it cannot be written."""
    text = simulation_svg(reports, title)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # created as any file is (the umask's mode)
    try:
        try:
            with open(tmp, "x", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as err:
        raise UserError(f"--svg {path} cannot be written ({err.strerror}); give another file") from err


def _runs(t_s: Sequence[float], values: Sequence[float | None]) -> list[list[tuple[float, float]]]:
    """The stretches of consecutive points with a value (None breaks the line)."""
    runs: list[list[tuple[float, float]]] = [[]]
    for t, v in zip(t_s, values, strict=True):
        if v is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((t, float(v)))
    return [run for run in runs if run]


NICE_MANTISSAS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)  # fifths of each are round


def _nice_ceiling(value: float) -> float:
    """The smallest NICE_MANTISSAS x 10^k at least `value` (1.0 for nothing to show): an axis end
    whose fifths are round tick labels, at most a third past the data."""
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** floor(log10(value))
    return next(m * magnitude for m in NICE_MANTISSAS if m * magnitude >= value)


def _stroke(i: int) -> str:
    """The stroke attributes of the i-th layout's line."""
    dash = DASHES[i % len(DASHES)]
    return f'stroke="{COLORS[i % len(COLORS)]}"' + (f' stroke-dasharray="{dash}"' if dash else "")
