"""The one error boundary: exception type -> one line on stderr and an exit code.

Exit codes: 0 ok, 1 bad input or a result that does not check out, 2 usage (typer/click).
Set HKV_DEBUG=1 to see the traceback instead.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from hkv.model_specs.errors import ModelSpecError
from hkv.planner.errors import PlanError

F = TypeVar("F", bound=Callable[..., Any])

BAD_INPUT = 1
# Ordered: the first matching type wins, so subclasses come before their bases.
_ERROR_TABLE: tuple[tuple[type[BaseException], int], ...] = (
    (ModelSpecError, BAD_INPUT),
    (PlanError, BAD_INPUT),
    (FileNotFoundError, BAD_INPUT),
    (IsADirectoryError, BAD_INPUT),
    (PermissionError, BAD_INPUT),
    (ValueError, BAD_INPUT),
)


class UserError(Exception):
    """Raised by CLI code for input problems found outside the library (exit 1)."""


def exit_code_for(err: BaseException) -> int | None:
    if isinstance(err, UserError):
        return BAD_INPUT
    for err_type, code in _ERROR_TABLE:
        if isinstance(err, err_type):
            return code
    return None


def error_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return f"hkv: error: {text}"


def handles_errors(command: F) -> F:
    """Wrap a command: known errors become one stderr line and exit 1; others re-raise."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as err:
            code = exit_code_for(err)
            if code is None or os.environ.get("HKV_DEBUG") == "1":
                raise
            print(error_line(err), file=sys.stderr)
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]
