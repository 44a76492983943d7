"""Errors raised while finding and reading model configs; every message is one line.

Each message names what was wrong and what would have been right, so the CLI can print it as is.
"""

from __future__ import annotations


class ModelSpecError(Exception):
    """Base of every error this package raises for bad input."""


class SpecNotFoundError(ModelSpecError, LookupError):
    """The argument is not a catalog name, HF id in the local cache, directory or config file."""


class InvalidConfigError(ModelSpecError, ValueError):
    """A config was found but cannot be read or interpreted (bad JSON, unknown layer kind, ...)."""
