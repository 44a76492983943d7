"""The Mooncake conversation trace as WorkloadRequests, for a tree without hkv's trace readers.

Each line is {"timestamp": ms, "input_length", "output_length", "hash_ids": [ids of 512-token
blocks]}. Built as hkv.runtime.simulation.traces.request_builder builds it (issue 24 item 1), so
both give the same token ids and a baseline commit replays exactly what this tree replays: the
block of hash id h is `h, T+1, ..., T+511` (T = 2^35), the prompt cut to input_length, and output
tokens are fresh runs from 2^40 in file order. Equal hash ids share tokens (and, the prefix
hashes being chained, exactly the prefix-cache blocks up to the first unshared one).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator

from hkv.runtime.simulation.workload_request import WorkloadRequest

MOONCAKE_BLOCK_LEN = 512
BLOCK_TEMPLATE_START = 1 << 35  # as request_builder.py
FRESH_ID_START = 1 << 40


def load_mooncake(path: str, limit: int | None = None) -> list[WorkloadRequest]:
    """The first `limit` requests of the trace (all with None), in file order."""
    return list(iter_mooncake(path, limit))


def iter_mooncake(path: str, limit: int | None = None) -> Iterator[WorkloadRequest]:
    size = MOONCAKE_BLOCK_LEN
    template = array("q", range(BLOCK_TEMPLATE_START, BLOCK_TEMPLATE_START + size))
    next_fresh = FRESH_ID_START
    with open(path, encoding="utf-8") as lines:
        for index, line in enumerate(lines):
            if limit is not None and index >= limit:
                return
            record = json.loads(line)
            prompt_len, output_len = int(record["input_length"]), int(record["output_length"])
            hash_ids = record["hash_ids"]
            assert len(hash_ids) == -(-prompt_len // size) and output_len > 0, f"line {index + 1}"
            if len(template) < prompt_len:
                template = template[:size] * (2 * len(hash_ids))
            prompt = template[:prompt_len]
            prompt[::size] = array("q", hash_ids)
            output = array("q", range(next_fresh, next_fresh + output_len))
            next_fresh += output_len
            yield WorkloadRequest(f"mooncake-{index}", record["timestamp"] / 1000.0, prompt, output)
