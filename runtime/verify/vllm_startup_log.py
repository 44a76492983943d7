"""The KV cache lines of vLLM's start-up log, as `hkv verify` compares them with the plan.

vLLM 0.32 logs, through its logger ("(EngineCore pid=7) INFO 11-22 00:06:47 [file.py:12] text"):

    CPU KV cache size: 4,096 tokens, Maximum concurrency for 2,048 tokens per request: 2.00x
    Add 1 padding layers, may waste at most 12.50% KV cache memory
    Setting attention block size to 384 tokens to ensure that attention page size is >= mamba page size.
    Padding mamba page size by 44.90% to ensure that mamba page size and attention page size are exactly equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

CAPACITY_RE = re.compile(r"(\w+) KV cache size: [\d,]+ tokens, Maximum concurrency for [\d,]+ tokens "
                         r"per request: [\d.]+x")
NOTE_KEYS = ("padding layers", "Setting attention block size", "Padding mamba page size")
_LOG_PREFIX_RE = re.compile(r"^.*?\[[\w./-]+:\d+\] ")


@dataclass(frozen=True)
class StartupLog:
    capacity_line: str | None  # the last capacity line, without the log prefix; None: not logged
    notes: tuple[str, ...]  # padding / Mamba alignment messages, sorted, without the log prefix


def strip_log_prefix(line: str) -> str:
    return _LOG_PREFIX_RE.sub("", line).strip()


def parse_startup_log(lines: Iterable[str]) -> StartupLog:
    capacity_line = None
    notes: set[str] = set()
    for line in lines:
        if match := CAPACITY_RE.search(line):
            capacity_line = match.group(0)
        if any(key in line for key in NOTE_KEYS):
            notes.add(strip_log_prefix(line))
    return StartupLog(capacity_line, tuple(sorted(notes)))
