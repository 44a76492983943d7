"""The one error boundary: what an exception means -> one line on stderr and an exit code.

Exit codes: 0 ok; 1 bad input (`InputError`, the base of every error a user's input can cause in
any package, and `UserError` raised here); 2 usage (click: a missing or unknown option, a value
outside an option's choices or of the wrong type); 3 a result that does not check out
(`CheckFailedError`: the run disagrees with the plan, the capacity probe with the prediction);
70 an internal error: anything else is a bug, printed with its traceback and one line saying so;
130 interrupted. HKV_DEBUG=1 prints the traceback of mapped errors too.

Library messages name options by their config field names (`InputError.fields`); the first
mention of each is shown as the CLI flag that sets it (`flag_of`).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from hkv.model_specs.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_BAD_INPUT = 1
EXIT_CHECK_FAILED = 3
EXIT_INTERNAL = 70  # EX_SOFTWARE of sysexits.h
EXIT_INTERRUPTED = 130
INTERNAL_ERROR_LINE = "hkv: internal error (a bug): please report it with the traceback above"


class UserError(InputError):
    """Raised by CLI code for input problems found outside the library (exit 1)."""


class CheckFailedError(Exception):
    """A result that does not check out (exit 3); the message is the line shown."""


# Ordered: the first matching type wins. Anything not listed is a bug (EXIT_INTERNAL).
_EXIT_CODES: tuple[tuple[type[BaseException], int, str], ...] = (
    (CheckFailedError, EXIT_CHECK_FAILED, "hkv: "),
    (InputError, EXIT_BAD_INPUT, "hkv: error: "),
)

# Config fields whose flag is not "--" + the field name with dashes.
_RENAMED_FIELDS = {
    "primary_layout": "--layout",
    "gpu_memory_bytes": "--gpu-memory",
    "available_kv_memory_bytes": "--available-kv-memory",
    "kv_memory_bytes": "--kv-memory",
    "enable_prefix_caching": "--no-prefix-caching",
    "prompt_file": "--prompt-file",
    "weights_bytes": "--weights-memory",
}


def flag_of(field: str) -> str:
    return _RENAMED_FIELDS.get(field, "--" + field.replace("_", "-"))


def user_message(err: BaseException) -> str:
    """The error's first line, its fields shown as flags (the first mention of each)."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    for field in getattr(err, "fields", ()):
        text = re.sub(rf"(?<![\w-]){re.escape(field)}(?![\w-])", flag_of(field), text, count=1)
    return text


def exit_code_for(err: BaseException) -> int | None:
    for err_type, code, _prefix in _EXIT_CODES:
        if isinstance(err, err_type):
            return code
    return None


def error_line(err: BaseException) -> str:
    prefix = next((p for t, _c, p in _EXIT_CODES if isinstance(err, t)), "hkv: error: ")
    return prefix + user_message(err)


def handles_errors(command: F) -> F:
    """Wrap a command in the boundary (module docstring)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except KeyboardInterrupt:
            print("hkv: interrupted", file=sys.stderr)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as err:
            code = exit_code_for(err)
            if code is None:
                traceback.print_exc()
                print(INTERNAL_ERROR_LINE, file=sys.stderr)
                raise typer.Exit(EXIT_INTERNAL) from None
            if os.environ.get("HKV_DEBUG") == "1":
                traceback.print_exc()
            print(error_line(err), file=sys.stderr)
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]
