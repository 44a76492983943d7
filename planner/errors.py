"""Errors the planner raises for bad user input; their messages are shown as one line."""

from __future__ import annotations

from hkv.model_specs.errors import InputError


class PlanError(InputError):
    """Base of user-facing planner errors (bad input, impossible budgets)."""


class InvalidInputError(PlanError, ValueError):
    """An option or environment variable has a value the planner cannot use."""


class DoesNotFitError(PlanError):
    """The model, or one block of its KV cache, does not fit the memory it was given."""


class LayoutUnavailableError(PlanError):
    """A layout strategy cannot express this model (e.g. vLLM without HMA on a Mamba hybrid)."""
