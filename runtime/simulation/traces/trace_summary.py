"""What reading a trace found: requests replayed, lines skipped and why; JSON-safe via asdict."""

from __future__ import annotations

from dataclasses import dataclass

from hkv.runtime.simulation.traces.too_long import TooLongSkips
from hkv.runtime.simulation.traces.trace_window import TraceWindow


@dataclass(frozen=True)
class SkipCount:
    """Lines the trace itself marks as requests not served (e.g. BurstGPT's failures)."""

    reason: str
    num_lines: int
    first_line: int


@dataclass(frozen=True)
class TraceSummary:
    """`num_rows_read`: requests read from the file (up to the window's end or the limit).
    `num_before_window`: of them, arriving before the window. `sorted_in_memory`: the file was
    not in time order, so its rows (never token arrays) were sorted in memory."""

    path: str
    format: str
    num_requests: int
    num_rows_read: int
    num_before_window: int
    skipped: tuple[SkipCount, ...]
    too_long: TooLongSkips | None
    window: TraceWindow
    sorted_in_memory: bool
    last_arrival_s: float  # of the rows read, after rebasing on the first request
