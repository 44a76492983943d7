"""hkv's own JSONL trace: one request per line.

Line fields: `arrival` (seconds from the start of the replay, >= 0, default 0), `prompt_len` (n)
or `prompt_tokens` ([ids]), `output_len` (m >= 1), optional `prefix_id` + `prefix_len` (requests
with one prefix_id share their first prefix_len tokens; default the whole prompt of the first),
optional `session` (the prompt is appended to that session's previous prompt and output: a
multi-turn conversation resent in full). Any other field is an error.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any

from hkv.runtime.simulation.traces.field_checks import TOKEN_ID_LIMIT, seconds, whole_number
from hkv.runtime.simulation.traces.json_lines import json_rows
from hkv.runtime.simulation.traces.trace_row import RowOrIssue, TraceRow

HKV_FIELDS = ("arrival", "prompt_len", "prompt_tokens", "output_len", "prefix_id", "prefix_len", "session")


def read_hkv_rows(lines: Iterable[str], block_size: int = 0) -> Iterator[RowOrIssue]:
    """`block_size` is unused (the dispatch table passes it to every reader)."""
    return json_rows(lines, _row)


def _key(obj: dict[str, Any], name: str) -> Hashable:
    value = obj[name]
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ValueError(f"{name} must be a string or a number, got {value!r}")
    return value


def _row(number: int, obj: dict[str, Any]) -> TraceRow:
    unknown = set(obj) - set(HKV_FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(sorted(unknown))} (an hkv trace line has "
                         f"{', '.join(HKV_FIELDS)})")
    arrival_s = seconds(obj.get("arrival", 0), "arrival")
    if ("prompt_len" in obj) == ("prompt_tokens" in obj):
        raise ValueError("give exactly one of prompt_len or prompt_tokens")
    tokens: tuple[int, ...] | None = None
    if "prompt_tokens" in obj:
        toks = obj["prompt_tokens"]
        if not isinstance(toks, list) or not toks or not all(
                isinstance(t, int) and not isinstance(t, bool) and 0 <= t < TOKEN_ID_LIMIT for t in toks):
            raise ValueError("prompt_tokens must be a non-empty list of token ids (0 <= id < 2^31)")
        tokens = tuple(toks)
        prompt_len = len(tokens)
    else:
        prompt_len = whole_number(obj["prompt_len"], "prompt_len", minimum=1)
    if "output_len" not in obj:
        raise ValueError("output_len is required")
    output_len = whole_number(obj["output_len"], "output_len", minimum=1)
    prefix = None
    if "prefix_id" in obj:
        if tokens is not None:
            raise ValueError("prefix_id applies to prompt_len lines only")
        prefix_len = whole_number(obj["prefix_len"], "prefix_len", minimum=1) if "prefix_len" in obj else prompt_len
        prefix = (_key(obj, "prefix_id"), prefix_len)
    session = _key(obj, "session") if "session" in obj else None
    return TraceRow(number, arrival_s, prompt_len, output_len, prompt_tokens=tokens, prefix=prefix,
                    session=session)
