"""Checks of one field's value, shared by the readers; each raises ValueError with the line's
message (what is wrong, what is expected)."""

from __future__ import annotations

from typing import Any

TOKEN_ID_LIMIT = 2**31  # explicit token ids and Mooncake hash ids stay below it (see request_builder)


def whole_number(value: Any, name: str, *, minimum: int) -> int:
    """A JSON integer >= minimum (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def seconds(value: Any, name: str) -> float:
    """A JSON number >= 0 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
    return float(value)


def count_text(text: str, name: str) -> int:
    """A CSV cell holding a token count: digits, >= 0 ("12" or "12.0" as some exports write it)."""
    cell = text.strip()
    try:
        number = float(cell)
    except ValueError:
        raise ValueError(f"{name} must be a whole number of tokens >= 0, got {cell!r}") from None
    if number < 0 or number != int(number):
        raise ValueError(f"{name} must be a whole number of tokens >= 0, got {cell!r}")
    return int(number)
