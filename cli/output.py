"""The output layer: rich for people on stdout, plain JSON on stdout for pipelines, notes on stderr."""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# rich is imported by the consoles below, not here: JSON output and the stderr notes never need it,
# and it would add ~20 ms to a cold `hkv plan --format json`.


class OutputFormat(str, Enum):
    human = "human"
    json = "json"


_PIPE_WIDTH = 200  # page width for tables when stdout is not a terminal and COLUMNS is unset


def stdout_console() -> Console:
    """Rich on stdout. Piped, printed lines never wrap (a check stays one line for grep) and tables
    get a wide page instead of rich's 80 columns; COLUMNS still sets the page when given."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, soft_wrap=True, width=None if "COLUMNS" in os.environ else _PIPE_WIDTH)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def write_json(payload: dict[str, Any]) -> None:
    """One JSON object on stdout; NaN/inf become null so strict parsers accept it."""
    sys.stdout.write(json.dumps(_finite(payload), indent=2) + "\n")
    sys.stdout.flush()


def note(message: str) -> None:
    print(f"hkv: {message}", file=sys.stderr)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
