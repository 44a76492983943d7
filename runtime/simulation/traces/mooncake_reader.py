"""Mooncake JSONL (FAST'25 traces): {"timestamp": ms, "input_length": n, "output_length": m,
"hash_ids": [ids]}, one request per line; other fields are ignored.

Each hash id names one block of `block_size` prompt tokens (512 in the published traces), so two
requests share exactly the blocks whose ids they share; the last block is cut to input_length.
The published conversation trace satisfies len(hash_ids) == ceil(input_length / block_size) on
all of its 12,031 lines; a line that does not is an error (a trace with other blocks needs its
block size). A line with output_length 0 is skipped (nothing to generate).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hkv.runtime.simulation.traces.field_checks import TOKEN_ID_LIMIT, seconds, whole_number
from hkv.runtime.simulation.traces.json_lines import json_rows
from hkv.runtime.simulation.traces.trace_row import LineSkip, RowOrIssue, TraceRow

MOONCAKE_BLOCK_SIZE = 512  # tokens per hash id in the published Mooncake traces
_REQUIRED = ("timestamp", "input_length", "output_length", "hash_ids")


def read_mooncake_rows(lines: Iterable[str], block_size: int = MOONCAKE_BLOCK_SIZE) -> Iterator[RowOrIssue]:
    return json_rows(lines, lambda number, obj: _row(number, obj, block_size))


def _row(number: int, obj: dict, block_size: int) -> TraceRow | LineSkip:
    missing = [key for key in _REQUIRED if key not in obj]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)} (a Mooncake line has {', '.join(_REQUIRED)})")
    arrival_s = seconds(obj["timestamp"], "timestamp (ms)") / 1000.0
    prompt_len = whole_number(obj["input_length"], "input_length", minimum=1)
    output_len = whole_number(obj["output_length"], "output_length", minimum=0)
    hash_ids = obj["hash_ids"]
    if not isinstance(hash_ids, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) and 0 <= h < TOKEN_ID_LIMIT for h in hash_ids):
        raise ValueError(f"hash_ids must be a list of block ids (integers, 0 <= id < 2^31), got {hash_ids!r:.60}")
    needed = -(-prompt_len // block_size)
    if len(hash_ids) != needed:
        raise ValueError(f"hash_ids has {len(hash_ids)} block ids, but input_length {prompt_len} needs "
                         f"ceil({prompt_len} / {block_size}) = {needed} blocks of {block_size} tokens "
                         f"(another block size: trace_block_size)")
    if output_len == 0:
        return LineSkip(number, "output_length 0 (nothing to generate)")
    return TraceRow(number, arrival_s, prompt_len, output_len, blocks=tuple(hash_ids))
