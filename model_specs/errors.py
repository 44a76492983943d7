"""Errors raised for bad user input, here and in every package above; every message is one line.

`InputError` is the base of every error a user's input can cause anywhere in hkv (model_specs is
the bottom of the import graph, so the base lives here): a front end maps it to "bad input"
and treats any other exception as a bug. Each message names what was wrong and what would have
been right, in the library's own terms: options are named by their config field names
(`max_model_len`), listed in `fields` so that a front end can show its own names for them.
"""

from __future__ import annotations


class InputError(Exception):
    """Base of every user-caused error. `fields`: config field names the message mentions; the
    first mention of each may be renamed by a front end (hkv's CLI shows its flags)."""

    def __init__(self, message: str, *, fields: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.fields = fields


class ModelSpecError(InputError):
    """Base of every error this package raises for bad input."""


class SpecNotFoundError(ModelSpecError, LookupError):
    """The argument is not a catalog name, HF id in the local cache, directory or config file."""


class InvalidConfigError(ModelSpecError, ValueError):
    """A config was found but cannot be read or interpreted (bad JSON, unknown layer kind, ...)."""


class UnsupportedArchitectureError(ModelSpecError):
    """The config is readable but names a model hkv does not handle: not a causal language model
    (an encoder such as BertModel), or a family whose config keys hkv cannot interpret (GPT-2)."""
