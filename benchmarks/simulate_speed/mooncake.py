"""The Mooncake conversation trace as WorkloadRequests, loaded by the benchmark itself.

Each line is {"timestamp": ms, "input_length", "output_length", "hash_ids": [ids of 512-token
blocks]}. Hash id h becomes the token ids 1 + h * 512 ... 512 + h * 512, so equal hash ids share
tokens (and prefix-cache blocks); a prompt is cut to input_length, and prompt tokens past the
last hash block and output tokens get ids no other request uses. Output tokens are unique.
(A benchmark-local stand-in until hkv reads the format itself, see issue 24 item 1.)
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator

from hkv.runtime.simulation.workload_request import WorkloadRequest

MOONCAKE_BLOCK_LEN = 512
_UNIQUE_BASE = 10**12  # above every 1 + h * 512 of the trace


def load_mooncake(path: str, limit: int | None = None) -> list[WorkloadRequest]:
    """The first `limit` requests of the trace (all with None), in file order."""
    return list(iter_mooncake(path, limit))


def iter_mooncake(path: str, limit: int | None = None) -> Iterator[WorkloadRequest]:
    next_unique = _UNIQUE_BASE
    size = MOONCAKE_BLOCK_LEN
    with open(path, encoding="utf-8") as lines:
        for index, line in enumerate(lines):
            if limit is not None and index >= limit:
                return
            record = json.loads(line)
            prompt_len, output_len = int(record["input_length"]), int(record["output_length"])
            tokens = array("q")
            for h in record["hash_ids"]:
                tokens.extend(range(1 + h * size, 1 + (h + 1) * size))
            del tokens[prompt_len:]
            if len(tokens) < prompt_len:
                missing = prompt_len - len(tokens)
                tokens.extend(range(next_unique, next_unique + missing))
                next_unique += missing
            output = array("q", range(next_unique, next_unique + output_len))
            next_unique += output_len
            yield WorkloadRequest(f"mooncake-{index}", record["timestamp"] / 1000.0, tokens, output)
