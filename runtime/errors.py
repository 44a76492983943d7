"""Typed runtime errors a user's input can cause (the CLI maps them to one-line messages)."""

from __future__ import annotations

from hkv.model_specs.errors import InputError


class RuntimeCacheError(InputError):
    """Base of the runtime's user-caused errors."""


class OutOfBlocksError(RuntimeCacheError):
    """A request cannot run even with the whole pool to itself."""


class RequestTooLongError(RuntimeCacheError):
    """A prompt is longer than max_model_len."""


class InvalidOptionError(RuntimeCacheError, ValueError):
    """A runtime option (sampling, lengths, device) has a value the runtime cannot use."""


class VllmUnavailableError(InputError):
    """No interpreter that imports vLLM was given or found, or vLLM refused to start (hkv verify)."""
