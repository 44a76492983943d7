"""What a trace reader makes of one line: a TraceRow (a request, cheap), a LineSkip (a request
the trace itself marks as not served) or a LineError (a line hkv cannot read)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

Fields = TypeVar("Fields")  # what a format's parser hands its row function: cells, an object


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One request as written: lengths and sharing, never token arrays.

    `arrival_s` is as the file gives it, in seconds (TraceSource rebases the public formats on the
    first request). `prompt_len` is this line's own prompt; a session's history comes on top.
    `blocks`: Mooncake hash ids, one per block of the trace's block size, in prompt order.
    `prompt_tokens`: explicit token ids (hkv JSONL). `prefix`: (prefix_id, prefix_len), requests
    with one prefix_id share their first prefix_len tokens. `session`: the previous turn of that
    session (its prompt and output) is resent before this prompt.
    """

    line: int
    arrival_s: float
    prompt_len: int
    output_len: int
    blocks: tuple[int, ...] = ()
    prompt_tokens: tuple[int, ...] | None = None
    prefix: tuple[Hashable, int] | None = None
    session: Hashable | None = None


@dataclass(frozen=True, slots=True)
class LineSkip:
    """A line the trace marks as a request that was not served (e.g. 0 output tokens)."""

    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class LineError:
    """A line hkv cannot read; `message` says what is wrong and what was expected."""

    line: int
    message: str


RowOrIssue = TraceRow | LineSkip | LineError


def parsed_rows(items: Iterable[tuple[int, Fields] | LineError], row: Callable[[int, Fields], TraceRow | LineSkip],
                errors: tuple[type[Exception], ...]) -> Iterator[RowOrIssue]:
    """`row(line number, fields)` per parsed line, the parser's LineErrors passed through; an
    exception of `errors` raised by `row` is that line's LineError."""
    for item in items:
        if isinstance(item, LineError):
            yield item
            continue
        number, fields = item
        try:
            yield row(number, fields)
        except errors as err:
            yield LineError(number, str(err))
