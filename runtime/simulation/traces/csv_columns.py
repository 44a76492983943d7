"""CSV traces: a header naming the columns, then one request per row, numbered as an editor
numbers lines (the header is line 1)."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator

from hkv.runtime.simulation.traces.trace_row import LineError, LineSkip, RowOrIssue, TraceRow, parsed_rows


def header_cells(line: str) -> list[str]:
    """The stripped cells of a header line (format detection reads only this one line)."""
    return [cell.strip() for cell in next(csv.reader([line]), [])]


def csv_cells(lines: Iterable[str], columns: tuple[str, ...]) -> Iterator[tuple[int, list[str]] | LineError]:
    """(line number, the cells of `columns` in that order) per non-empty row. A header lacking a
    column is one LineError on line 1 and nothing more; a row too short is a LineError."""
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        return
    names = [cell.strip() for cell in header]
    missing = [c for c in columns if c not in names]
    if missing:
        yield LineError(reader.line_num, f"the header lacks column(s) {', '.join(missing)}: expected "
                                         f"{','.join(columns)}, got {','.join(names)[:120]!r}")
        return
    index = [names.index(c) for c in columns]
    width = max(index) + 1
    for cells in reader:
        if not cells or not any(cell.strip() for cell in cells):
            continue
        if len(cells) < width:
            yield LineError(reader.line_num, f"{len(cells)} column(s), expected {len(names)} "
                                             f"({','.join(names)})")
            continue
        yield reader.line_num, [cells[i] for i in index]


def csv_rows(lines: Iterable[str], columns: tuple[str, ...],
             row: Callable[[int, list[str]], TraceRow | LineSkip]) -> Iterator[RowOrIssue]:
    """`row(line number, the cells of columns)` per row; its ValueError is that line's LineError."""
    return parsed_rows(csv_cells(lines, columns), row, (ValueError,))
