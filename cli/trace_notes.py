"""The lines `hkv simulate` writes on stderr about its workload: which trace was read and how,
what it skipped and why (with the option that would replay it)."""

from __future__ import annotations

from hkv.runtime.simulation.traces.too_long import TooLongSkips
from hkv.runtime.simulation.traces.trace_summary import TraceSummary


def too_long_note(skips: TooLongSkips | None) -> str | None:
    if skips is None or not skips.num_skipped:
        return None
    return (f"skipped {skips.num_skipped:,} request(s) longer than --max-model-len {skips.max_model_len:,} allows "
            f"(first: {skips.first_request_id}, {skips.first_prompt_len:,} prompt tokens), as vLLM rejects "
            f"them; raise --max-model-len to replay them")


def trace_notes(summary: TraceSummary) -> list[str]:
    part = summary.window.describe()
    lines = [f"trace {summary.path}: {summary.format} format, {summary.num_requests:,} requests replayed"
             + (f" ({part})" if part else "")
             + (", sorted by arrival in memory (the file is not in time order)" if summary.sorted_in_memory else "")]
    if summary.num_before_window:
        lines.append(f"skipped {summary.num_before_window:,} request(s) arriving before the window")
    lines += [f"skipped {s.num_lines:,} line(s) of the trace with {s.reason} (first: line {s.first_line})"
              for s in summary.skipped]
    too_long = too_long_note(summary.too_long)
    return lines + ([too_long] if too_long else [])
