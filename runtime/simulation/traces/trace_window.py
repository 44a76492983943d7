"""The part of a trace replayed: a time window and a request limit, applied while streaming."""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.errors import InvalidInputError


@dataclass(frozen=True)
class TraceWindow:
    """Requests arriving in [start_s, end_s) seconds after the trace's first request (hkv JSONL:
    after the replay's start), at most `limit` of them, the first ones. The window's requests
    arrive `start_s` earlier, so the replay starts at its first request and the simulated time
    (and the throughput computed from it) covers the window only. The file is read only up to
    the window's end or the limit: lines past it are neither checked nor replayed."""

    start_s: float = 0.0
    end_s: float | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        assert self.start_s >= 0 and (self.end_s is None or self.end_s > self.start_s), self
        assert self.limit is None or self.limit >= 1, self

    @staticmethod
    def parse(window: str | None, limit: int | None) -> TraceWindow:
        """`window` is "START:END" in seconds, either side may be empty ("600:", ":3600");
        raises InvalidInputError naming trace_window or trace_limit."""
        if limit is not None and limit < 1:
            raise InvalidInputError(f"trace_limit must be a number of requests >= 1, got {limit}",
                                    fields=("trace_limit",))
        if window is None:
            return TraceWindow(limit=limit)
        start_text, sep, end_text = window.partition(":")
        try:
            if not sep:
                raise ValueError
            start_s = float(start_text) if start_text.strip() else 0.0
            end_s = float(end_text) if end_text.strip() else None
        except ValueError:
            raise InvalidInputError(f"trace_window must be START:END in seconds (e.g. 600:1200, 600: or :1200), "
                                    f"got {window!r}", fields=("trace_window",)) from None
        if not 0 <= start_s < (end_s if end_s is not None else float("inf")):
            raise InvalidInputError(f"trace_window needs 0 <= START < END, got {window!r}",
                                    fields=("trace_window",))
        return TraceWindow(start_s, end_s, limit)

    def describe(self) -> str:
        """`--trace-window 600:1200 --trace-limit 500`-like words for notes (empty when the whole trace)."""
        parts = []
        if self.start_s or self.end_s is not None:
            end = "" if self.end_s is None else f"{self.end_s:g}"
            parts.append(f"window {self.start_s:g}:{end} s")
        if self.limit is not None:
            parts.append(f"first {self.limit:,} requests")
        return ", ".join(parts)
