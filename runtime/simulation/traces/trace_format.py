"""The trace formats hkv reads (the names of `--trace-format`), and telling them apart by the
first non-empty line of a file."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from hkv.runtime.simulation.traces.azure_reader import AZURE_COLUMNS, read_azure_rows
from hkv.runtime.simulation.traces.burstgpt_reader import (
    BURSTGPT_COLUMNS,
    BURSTGPT_HEADER,
    read_burstgpt_rows,
)
from hkv.runtime.simulation.traces.csv_columns import header_cells
from hkv.runtime.simulation.traces.hkv_jsonl_reader import read_hkv_rows
from hkv.runtime.simulation.traces.mooncake_reader import read_mooncake_rows
from hkv.runtime.simulation.traces.trace_row import RowOrIssue

RowReader = Callable[[Iterable[str], int], Iterator[RowOrIssue]]  # (lines, block size)


@dataclass(frozen=True)
class TraceFormat:
    """`relative_arrival`: the file's times are wall-clock (rebased on its first request);
    otherwise they are seconds from the start of the replay already."""

    name: str
    layout: str  # what its lines look like, for messages and --help
    read_rows: RowReader
    looks_like: Callable[[str], bool]  # the first non-empty line is this format's
    relative_arrival: bool


def _json_with(*keys: str) -> Callable[[str], bool]:
    return lambda line: line.lstrip().startswith("{") and all(f'"{k}"' in line for k in keys)


def _csv_with(columns: tuple[str, ...]) -> Callable[[str], bool]:
    return lambda line: set(columns) <= set(header_cells(line))


# Order matters: the first format whose looks_like accepts the line wins (Mooncake before hkv's
# own JSONL, which takes any other JSON object and names its unknown fields line by line).
TRACE_FORMATS: tuple[TraceFormat, ...] = (
    TraceFormat("mooncake", 'JSONL {"timestamp": ms, "input_length", "output_length", "hash_ids"}',
                read_mooncake_rows, _json_with("hash_ids"), relative_arrival=True),
    TraceFormat("azure", "CSV " + ",".join(AZURE_COLUMNS), read_azure_rows, _csv_with(AZURE_COLUMNS),
                relative_arrival=True),
    TraceFormat("burstgpt", "CSV " + BURSTGPT_HEADER, read_burstgpt_rows, _csv_with(BURSTGPT_COLUMNS),
                relative_arrival=True),
    TraceFormat("hkv", 'JSONL {"arrival": s, "prompt_len": n, "output_len": m, ...}', read_hkv_rows,
                _json_with(), relative_arrival=False),
)
TRACE_FORMAT_NAMES = tuple(f.name for f in TRACE_FORMATS)
_BY_NAME = {f.name: f for f in TRACE_FORMATS}


def trace_format(name: str) -> TraceFormat:
    """The format named `name` (one of TRACE_FORMAT_NAMES; the CLI's choices guarantee it)."""
    return _BY_NAME[name]


def detect_format(first_line: str) -> TraceFormat | None:
    """The format whose first line this is, or None."""
    return next((f for f in TRACE_FORMATS if f.looks_like(first_line)), None)


def formats_known() -> str:
    """`mooncake (JSONL ...), azure (CSV ...), ...` for messages."""
    return "; ".join(f"{f.name} ({f.layout})" for f in TRACE_FORMATS)
