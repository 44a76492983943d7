"""BurstGPT (HPMLL/BurstGPT), CSV: Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type.

Timestamp is in seconds from the start of the trace. BurstGPT marks a failed request by 0
Response tokens (the release's *_without_fails files drop them): such rows are skipped and
counted. Both log types ("Conversation log", "API log") are served requests and are replayed;
Model and Total tokens are not used. Prompts share nothing (the trace has no content).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hkv.runtime.simulation.traces.csv_columns import csv_rows
from hkv.runtime.simulation.traces.field_checks import count_text
from hkv.runtime.simulation.traces.trace_row import LineSkip, RowOrIssue, TraceRow

BURSTGPT_COLUMNS = ("Timestamp", "Request tokens", "Response tokens")
BURSTGPT_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"


def read_burstgpt_rows(lines: Iterable[str], block_size: int = 0) -> Iterator[RowOrIssue]:
    """`block_size` is unused (the dispatch table passes it to every reader)."""
    return csv_rows(lines, BURSTGPT_COLUMNS, _row)


def _row(number: int, cells: list[str]) -> TraceRow | LineSkip:
    stamp, request, response = cells
    try:
        arrival_s = float(stamp)
    except ValueError:
        arrival_s = float("nan")
    if not arrival_s >= 0:  # also refuses nan and text
        raise ValueError(f"Timestamp must be a number of seconds >= 0, got {stamp.strip()!r}")
    prompt_len = count_text(request, "Request tokens")
    output_len = count_text(response, "Response tokens")
    if output_len == 0:
        return LineSkip(number, "0 Response tokens (a failed request)")
    if prompt_len == 0:
        return LineSkip(number, "0 Request tokens (nothing to prefill)")
    return TraceRow(number, arrival_s, prompt_len, output_len)
