"""Read a JSONL trace into WorkloadRequests; every bad line is reported with its number.

Line fields: `arrival` (seconds, >= 0, default 0), `prompt_len` (n) or `prompt_tokens` ([ids]),
`output_len` (m >= 1), optional `prefix_id` + `prefix_len` (requests with one prefix_id share
their first prefix_len tokens), optional `session` (the prompt is appended to that session's
previous prompt and output: a multi-turn conversation resent in full).
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

from hkv.planner.errors import InvalidInputError
from hkv.runtime.simulation.workload_gen import _TokenSource
from hkv.runtime.simulation.workload_request import WorkloadRequest

_MAX_REPORTED = 5
_FIELDS = ("trace",)  # the option every message here is about (see InputError.fields)


def _field_int(obj: dict[str, Any], key: str, *, minimum: int) -> int:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{key} must be an integer >= {minimum}, got {value!r}")
    return value


def _parse_line(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ValueError("each line must be a JSON object")
    unknown = set(obj) - {"arrival", "prompt_len", "prompt_tokens", "output_len", "prefix_id", "prefix_len",
                          "session"}
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(sorted(unknown))}")
    arrival = obj.get("arrival", 0)
    if isinstance(arrival, bool) or not isinstance(arrival, (int, float)) or arrival < 0:
        raise ValueError(f"arrival must be a number of seconds >= 0, got {arrival!r}")
    if ("prompt_len" in obj) == ("prompt_tokens" in obj):
        raise ValueError("give exactly one of prompt_len or prompt_tokens")
    if "prompt_tokens" in obj:
        toks = obj["prompt_tokens"]
        if not isinstance(toks, list) or not toks or not all(
                isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 2**31 for t in toks):
            raise ValueError("prompt_tokens must be a non-empty list of token ids (0 <= id < 2^31)")
    else:
        _field_int(obj, "prompt_len", minimum=1)
    if "output_len" not in obj:
        raise ValueError("output_len is required")
    _field_int(obj, "output_len", minimum=1)
    if "prefix_id" in obj:
        if "prompt_tokens" in obj:
            raise ValueError("prefix_id applies to prompt_len lines only")
        _field_int(obj, "prefix_len", minimum=1) if "prefix_len" in obj else None
    return {**obj, "arrival": float(arrival)}


def read_trace(path: str | Path) -> list[WorkloadRequest]:
    """Raises InvalidInputError naming the file and the first bad lines (nothing is returned then)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"trace {path}: no such file", fields=_FIELDS)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"trace {path}: not a UTF-8 text file (expected JSON lines)",
                                fields=_FIELDS) from None
    except OSError as err:
        raise InvalidInputError(f"trace {path}: cannot read ({err.strerror})", fields=_FIELDS) from None
    rows, errors = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, _parse_line(json.loads(line))))
        except (ValueError, KeyError) as err:  # json.JSONDecodeError is a ValueError
            errors.append(f"line {number}: {err}")
    if errors:
        more = f" (+{len(errors) - _MAX_REPORTED} more)" if len(errors) > _MAX_REPORTED else ""
        raise InvalidInputError(f"trace {path}: {'; '.join(errors[:_MAX_REPORTED])}{more}", fields=_FIELDS)
    if not rows:
        raise InvalidInputError(f"trace {path}: the file has no requests", fields=_FIELDS)
    return _build(rows)


def _build(rows: list[tuple[int, dict[str, Any]]]) -> list[WorkloadRequest]:
    tokens = _TokenSource()
    prefixes: dict[Any, array] = {}
    sessions: dict[Any, tuple[array, int]] = {}
    out = []
    for index, (number, row) in enumerate(sorted(rows, key=lambda r: (r[1]["arrival"], r[0]))):
        if "prompt_tokens" in row:
            prompt = array("q", row["prompt_tokens"])
        else:
            n = row["prompt_len"]
            prompt = tokens.fresh(n)
            if "prefix_id" in row:
                shared = prefixes.setdefault(row["prefix_id"], tokens.fresh(row.get("prefix_len", n)))
                prompt = shared[:n] + tokens.fresh(max(0, n - len(shared)))
        depends_on = None
        if "session" in row and row["session"] in sessions:
            history, depends_on = sessions[row["session"]]
            prompt = history + prompt
        output = tokens.fresh(row["output_len"])
        if "session" in row:
            sessions[row["session"]] = (prompt + output, index)
        out.append(WorkloadRequest(f"line-{number}", row["arrival"], prompt, output, depends_on))
    return out
