"""Option values converted without pydantic, for a fast `hkv plan`.

Typer 0.2x converts every option value through a pydantic TypeAdapter that it builds on first use,
so parsing one command line imports pydantic and builds ~40 adapters: ~100 ms on the project's
machine, 40 % of a cold `hkv plan`. This module installs, per parameter of a built command, a
converter that handles the plain cases itself (a str, a canonical int or float, an Enum choice, a
`parser=` that succeeds) and hands everything else to typer's own converter, built only then. Contract: for every value the
result is typer's, and so is every error: an input the fast path is not certain of (a sign, an
exponent, a padded number, a choice that does not match, a parser that raises) goes to typer, which
converts it or words the usage error exactly as before.

This reaches into typer internals (`_TyperParameter._runtime_param`, `type_descriptor`); where a
typer release lacks them, `install_light_coercion` leaves the command alone (slower, still correct).
tests/cli/test_light_coercion.py compares both paths value by value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum
from typing import Any

# Canonical decimals only, and short ones (int() and float() agree with pydantic on far more, but
# nothing on a command line needs more): the rest goes to typer.
_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?")  # no exponent, inf or nan
_MISS = object()  # the fast path is not sure: typer decides


class LightCoercion:
    """A stand-in for typer's RuntimeParam: `coerce(value, param, ctx)` (see the module doc)."""

    def __init__(self, descriptor: Any) -> None:
        self._descriptor = descriptor
        self._typer: Any = None  # typer's own converter, built on the first value we cannot take

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None and not (param.multiple or param.nargs == -1):
            return None  # as typer's RuntimeParam.coerce: an option not given stays None
        if param.multiple or param.nargs != 1:
            return self._typer_coerce(value, param, ctx)
        fast = _fast_value(value, self._descriptor, ctx)
        return self._typer_coerce(value, param, ctx) if fast is _MISS else fast

    def _typer_coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if self._typer is None:
            from typer._coercion import build_runtime_param

            self._typer = build_runtime_param(self._descriptor)
        return self._typer.coerce(value, param=param, ctx=ctx)


def install_light_coercion(params: Iterable[Any]) -> None:
    """Give each typer parameter the fast converter, once; a no-op where the typer release has no
    lazily built `_runtime_param` to pre-empt (older typers never use pydantic)."""
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", _MISS) is not None:
            continue
        if getattr(descriptor, "file_annotation", None) is not None or descriptor.is_path:
            continue  # files and paths: typer opens or resolves them, nothing to gain here
        param._runtime_param = LightCoercion(descriptor)


def _fast_value(value: Any, descriptor: Any, ctx: Any) -> Any:
    info = descriptor.parameter_info
    annotation = descriptor.annotation
    if info.parser is not None:
        try:
            return info.parser(value)
        except Exception:  # noqa: BLE001 - typer runs the parser again and reports it its way
            return _MISS
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _choice(value, annotation, info.case_sensitive, ctx)
    if type(value) is not str:
        return value if type(value) is annotation and annotation in (str, int, float) else _MISS
    if annotation is str:
        return value
    if info.min is not None or info.max is not None or info.clamp:
        return _MISS  # a ranged number: typer words the bound
    if annotation is int and _INT.fullmatch(value):
        return int(value)
    if annotation is float and _FLOAT.fullmatch(value):
        return float(value)
    return _MISS


def _choice(value: Any, enum: type[Enum], case_sensitive: bool, ctx: Any) -> Any:
    """The member `value` names, compared as typer compares choices (member value as text,
    casefolded unless case-sensitive); _MISS where typer would refuse it or normalise tokens."""
    if isinstance(value, enum):
        return value
    if type(value) is not str or getattr(ctx, "token_normalize_func", None) is not None:
        return _MISS
    wanted = value if case_sensitive else value.casefold()
    for member in enum:
        text = str(member.value)
        if (text if case_sensitive else text.casefold()) == wanted:
            return member
    return _MISS
