"""Read the log text `hkv explain-log` is given: a file path, or `-` for standard input."""

from __future__ import annotations

import sys
from pathlib import Path

from hkv.cli.errors import UserError


def read_log_text(source: str) -> str:
    """The text of `source`; UserError naming what is wrong with a path (missing, a directory,
    not text)."""
    if source == "-":
        return sys.stdin.read()
    path = Path(source).expanduser()
    if not path.exists():
        raise UserError(f"{source}: no such log file; give a vLLM start-up log file, or - to read standard input")
    if path.is_dir():
        raise UserError(f"{source} is a directory; give a vLLM start-up log file, or - to read standard input")
    data = path.read_bytes()
    if b"\x00" in data:
        raise UserError(f"{source} is binary, not a text log; give vLLM's start-up log as text")
    return data.decode("utf-8", errors="replace")
