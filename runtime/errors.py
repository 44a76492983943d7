"""Typed runtime errors (the CLI maps them to one-line messages)."""

from __future__ import annotations


class RuntimeCacheError(Exception):
    """Base of the runtime's errors."""


class OutOfBlocksError(RuntimeCacheError):
    """A request cannot run even with the whole pool to itself."""


class RequestTooLongError(RuntimeCacheError):
    """A prompt is longer than max_model_len."""
