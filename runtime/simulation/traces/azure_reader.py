"""Azure LLM inference traces (AzurePublicDataset), CSV: TIMESTAMP,ContextTokens,GeneratedTokens.

Both releases use these three columns. The 2023 files (AzureLLMInferenceTrace_{conv,code}.csv)
write timestamps like `2023-11-16 18:15:46.6805900` (seven fraction digits); the 2024 week-long
files write `2024-05-10 00:00:00.009930+00:00`, some rows without a fraction. Both are read (any
number of fraction digits, an optional `T`, an optional `Z` or +hh:mm offset). ContextTokens is
the prompt, GeneratedTokens the output; a row with 0 of either is skipped (nothing to replay).
Prompts share nothing (the trace has no content): every prompt is a fresh run of token ids.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Iterator

from hkv.runtime.simulation.traces.csv_columns import csv_rows
from hkv.runtime.simulation.traces.field_checks import count_text
from hkv.runtime.simulation.traces.trace_row import LineSkip, RowOrIssue, TraceRow

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_TIMESTAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?")


def timestamp_s(text: str) -> float:
    """Seconds since the epoch of `2023-11-16 18:15:46.6805900` or `2024-05-10 00:00:00.0099+00:00`
    (no offset: UTC). Raises ValueError saying what is expected."""
    match = _TIMESTAMP.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"TIMESTAMP must look like 2023-11-16 18:15:46.6805900 or "
                         f"2024-05-10 00:00:00.009930+00:00, got {text.strip()!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    whole = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    fraction = float(match.group(7)) if match.group(7) else 0.0
    offset = match.group(8)
    if offset and offset != "Z":
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        whole -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return whole + fraction


def read_azure_rows(lines: Iterable[str], block_size: int = 0) -> Iterator[RowOrIssue]:
    """`block_size` is unused (the dispatch table passes it to every reader)."""
    return csv_rows(lines, AZURE_COLUMNS, _row)


def _row(number: int, cells: list[str]) -> TraceRow | LineSkip:
    stamp, context, generated = cells
    arrival_s = timestamp_s(stamp)
    prompt_len = count_text(context, "ContextTokens")
    output_len = count_text(generated, "GeneratedTokens")
    if prompt_len == 0 or output_len == 0:
        return LineSkip(number, "0 ContextTokens or GeneratedTokens (nothing to replay)")
    return TraceRow(number, arrival_s, prompt_len, output_len)
