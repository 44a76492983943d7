"""TraceSource: a trace file as a re-iterable workload, streamed.

Constructing one reads the file once, cheaply: every line read is parsed into a TraceRow
(lengths, block ids; no token arrays) and checked, and what a replay will yield is counted. A bad
line raises InvalidInputError naming the file and the first bad lines (with a count of the
rest); nothing is replayed then. Each iteration re-opens the file and yields WorkloadRequests in
arrival order, building a request's token arrays only when the simulator pulls it, so memory is
bounded by the requests in flight, not by the file (see request_builder for the hkv format's
prefixes and sessions). Every iteration yields the same requests.

Arrival order: a file in time order is streamed. A file found out of order is read whole into
cheap rows, sorted by (arrival, line) and replayed from memory (rows only: their token arrays are
still built one request at a time).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO

from hkv.planner.errors import InvalidInputError
from hkv.runtime.simulation.traces.request_builder import RequestBuilder
from hkv.runtime.simulation.traces.too_long import TooLongSkips, is_too_long
from hkv.runtime.simulation.traces.trace_format import TraceFormat, detect_format, formats_known, trace_format
from hkv.runtime.simulation.traces.trace_options import TraceOptions
from hkv.runtime.simulation.traces.trace_row import LineError, LineSkip, RowOrIssue, TraceRow
from hkv.runtime.simulation.traces.trace_summary import SkipCount, TraceSummary
from hkv.runtime.simulation.workload_request import WorkloadRequest

_MAX_REPORTED = 5  # bad lines named in the message; the rest are counted
_FIELDS = ("trace", "trace_format", "trace_window", "trace_limit", "trace_block_size", "max_model_len")


class _Verdict(Enum):
    REPLAY = "replay"
    BEFORE_WINDOW = "before window"
    TOO_LONG = "too long"


@dataclass(frozen=True, slots=True)
class _Step:
    row: TraceRow
    arrival_s: float  # rebased on the window's start
    prompt_len: int  # with a session's history
    verdict: _Verdict


class _OutOfOrder(Exception):
    """A row arrives before the previous one: the first pass starts over, sorting in memory."""


class _Issues:
    """Bad and skipped lines seen by the first pass."""

    def __init__(self) -> None:
        self.errors: list[LineError] = []
        self.num_errors = 0
        self.skips: dict[str, SkipCount] = {}

    def rows(self, items: Iterable[RowOrIssue], stop_when_out_of_order: bool) -> Iterator[TraceRow]:
        last_s = float("-inf")
        for item in items:
            if isinstance(item, LineError):
                self.num_errors += 1
                if len(self.errors) < _MAX_REPORTED:
                    self.errors.append(item)
            elif isinstance(item, LineSkip):
                seen = self.skips.get(item.reason)
                self.skips[item.reason] = SkipCount(item.reason, 1, item.line) if seen is None else \
                    SkipCount(item.reason, seen.num_lines + 1, seen.first_line)
            else:
                if item.arrival_s < last_s and stop_when_out_of_order:
                    raise _OutOfOrder
                last_s = max(last_s, item.arrival_s)
                yield item


class TraceSource:
    """A trace file as a workload (module docstring). Raises InvalidInputError for a missing,
    unreadable, empty or malformed file, an unknown format, and a window or limits that leave
    no request."""

    def __init__(self, path: str | Path, options: TraceOptions | None = None) -> None:
        self.path = Path(path)
        self.options = options or TraceOptions()
        self.format: TraceFormat = self._pick_format()
        self._sorted_rows: list[TraceRow] | None = None  # only for a file out of time order
        self.summary: TraceSummary = self._first_pass()

    @property
    def num_requests(self) -> int:
        """How many requests each iteration yields."""
        return self.summary.num_requests

    def __len__(self) -> int:
        return self.summary.num_requests

    def __iter__(self) -> Iterator[WorkloadRequest]:
        builder = RequestBuilder(self.options.block_size)
        built = (builder.build(step.row, step.arrival_s, step.verdict is _Verdict.REPLAY)
                 for step in self._walk(self._rows()))
        return filter(None, built)  # keeps no reference to a request it has yielded

    def lengths(self) -> Iterator[tuple[int, int]]:
        """(prompt_len, output_len) of each request an iteration yields, in the same order, from the
        cheap rows alone (no token arrays): for sizing from the trace's length distribution.
        Re-reads the file (or the sorted rows) on each call."""
        for step in self._walk(self._rows()):
            if step.verdict is _Verdict.REPLAY:
                yield step.prompt_len, step.row.output_len

    # --- reading ---------------------------------------------------------------------------------

    def _error(self, what: str) -> InvalidInputError:
        return InvalidInputError(f"trace {self.path}: {what}", fields=_FIELDS)

    def _open(self) -> IO[str]:
        if not self.path.is_file():
            raise self._error("no such file")
        try:
            return open(self.path, encoding="utf-8", newline="")
        except OSError as err:
            raise self._error(f"cannot read ({err.strerror})") from None

    def _lines(self) -> Iterator[str]:
        with self._open() as file:
            try:
                yield from file
            except UnicodeDecodeError:
                raise self._error("not a UTF-8 text file (expected JSON lines or CSV)") from None

    def _pick_format(self) -> TraceFormat:
        if self.options.format is not None:
            return trace_format(self.options.format)
        first = next((line for line in self._lines() if line.strip()), None)
        if first is None:
            raise self._error("the file has no requests")
        found = detect_format(first)
        if found is None:
            raise self._error(f"cannot tell the format from its first line ({first.strip()[:60]!r}); hkv reads "
                              f"{formats_known()}; name one with trace_format")
        return found

    def _parsed(self) -> Iterator[RowOrIssue]:
        return self.format.read_rows(self._lines(), self.options.block_size)

    def _rows(self) -> Iterator[TraceRow]:
        """The rows of a replay, in arrival order."""
        if self._sorted_rows is not None:
            yield from self._sorted_rows
            return
        for item in self._parsed():
            if isinstance(item, TraceRow):
                yield item
            elif isinstance(item, LineError):
                raise self._error(f"line {item.line} changed since the trace was read: {item.message}")

    def _walk(self, rows: Iterable[TraceRow]) -> Iterator[_Step]:
        """Every row up to the window's end or the limit, with its verdict. Rows before the window
        and too-long ones are walked too: a later turn of their session resends them."""
        window, max_len = self.options.window, self.options.max_model_len
        first_s: float | None = None
        history_len: dict[object, int] = {}  # per session: the tokens its next turn resends
        num_replayed = 0
        for row in rows:
            if first_s is None:
                first_s = row.arrival_s if self.format.relative_arrival else 0.0
            arrival_s = row.arrival_s - first_s
            if (window.end_s is not None and arrival_s >= window.end_s) or \
                    (window.limit is not None and num_replayed >= window.limit):
                return
            prompt_len = row.prompt_len
            if row.session is not None:
                prompt_len += history_len.get(row.session, 0)
                history_len[row.session] = prompt_len + row.output_len
            if arrival_s < window.start_s:
                verdict = _Verdict.BEFORE_WINDOW
            elif is_too_long(prompt_len, max_len):
                verdict = _Verdict.TOO_LONG
            else:
                verdict = _Verdict.REPLAY
                num_replayed += 1
            yield _Step(row, arrival_s - window.start_s, prompt_len, verdict)

    # --- the first pass --------------------------------------------------------------------------

    def _first_pass(self) -> TraceSummary:
        issues = _Issues()
        try:
            summary = self._tally(self._walk(issues.rows(self._parsed(), stop_when_out_of_order=True)), issues)
        except _OutOfOrder:
            issues = _Issues()
            rows = list(issues.rows(self._parsed(), stop_when_out_of_order=False))
            self._sorted_rows = sorted(rows, key=lambda r: (r.arrival_s, r.line))
            summary = self._tally(self._walk(self._sorted_rows), issues)
        if issues.num_errors:
            more = issues.num_errors - len(issues.errors)
            listed = "; ".join(f"line {e.line}: {e.message}" for e in issues.errors)
            raise self._error(listed + (f" (+{more} more bad lines)" if more > 0 else ""))
        if not summary.num_requests:
            raise self._error(self._why_empty(summary))
        return summary

    def _tally(self, steps: Iterator[_Step], issues: _Issues) -> TraceSummary:
        """Counts what a replay yields, holding no row. `issues` is complete once `steps` is."""
        max_len = self.options.max_model_len
        too_long = None if max_len is None else TooLongSkips(max_len)
        num_read = num_requests = num_before = 0
        last_s = 0.0
        for step in steps:
            num_read += 1
            last_s = step.arrival_s
            if step.verdict is _Verdict.REPLAY:
                num_requests += 1
            elif step.verdict is _Verdict.BEFORE_WINDOW:
                num_before += 1
            elif too_long is not None:
                too_long = too_long.add(f"line-{step.row.line}", step.prompt_len)
        window = self.options.window
        return TraceSummary(str(self.path), self.format.name, num_requests, num_read, num_before,
                            tuple(issues.skips.values()), too_long, window, self._sorted_rows is not None,
                            last_s + window.start_s)

    @staticmethod
    def _why_empty(summary: TraceSummary) -> str:
        if summary.num_rows_read == summary.num_before_window and summary.num_rows_read:
            w = summary.window
            end = "" if w.end_s is None else f"{w.end_s:g}"
            return (f"no request arrives in trace_window {w.start_s:g}:{end} (the requests read arrive "
                    f"from 0 to {summary.last_arrival_s:,.1f} s after the first)")
        if summary.too_long is not None and summary.too_long.num_skipped:
            t = summary.too_long
            return (f"all {t.num_skipped:,} request(s) exceed max_model_len {t.max_model_len:,} (first: "
                    f"{t.first_request_id}, {t.first_prompt_len:,} prompt tokens); raise it to replay them")
        skipped = ", ".join(f"{s.num_lines:,} with {s.reason}" for s in summary.skipped)
        return "the file has no requests" + (f" hkv can replay ({skipped})" if skipped else "")
