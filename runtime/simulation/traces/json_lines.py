"""JSON lines: one object per non-empty line, numbered from 1 as an editor numbers them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hkv.runtime.simulation.traces.trace_row import LineError, LineSkip, RowOrIssue, TraceRow, parsed_rows


def json_objects(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]] | LineError]:
    """(line number, object) per non-empty line; a LineError for text that is not a JSON object."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError as err:  # json.JSONDecodeError is a ValueError
            yield LineError(number, f"not JSON ({err}); expected one JSON object per line")
            continue
        if not isinstance(obj, dict):
            yield LineError(number, "each line must be a JSON object")
            continue
        yield number, obj


def json_rows(lines: Iterable[str],
              row: Callable[[int, dict[str, Any]], TraceRow | LineSkip]) -> Iterator[RowOrIssue]:
    """`row(line number, object)` per object; its ValueError or KeyError is that line's LineError."""
    return parsed_rows(json_objects(lines), row, (ValueError, KeyError))
