"""cli/light_coercion.py converts option values exactly as typer's own (pydantic) converter does.

Every parameter of the real `plan` and `simulate` commands gets a spread of values, canonical and
not (signs, padding, exponents, case, bad choices, empty list items); the fast converter must give
typer's value, of typer's type, or raise typer's error with typer's message.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest
from typer._coercion import build_runtime_param

from hkv.cli.lazy_commands import build_command
from hkv.cli.light_coercion import LightCoercion

_TEXT = ["abc", "", " padded ", "h100,h200", "0.9"]
_INT = ["0", "7", "-3", "12345678901234567890", "007", "+5", " 5", "5.0", "1_000", "-0", "abc", "", "1e3"]
_FLOAT = ["0.9", "1", "-0.5", "0", "-0", "1e-1", ".5", "5.", "inf", "nan", "0.90000000000000002",
          "123456789012345.123456789012345", "abc", "", " 0.5"]
_LISTS = ["h100", "h100,h200", "h100,,h200", " h100 , h200 ", "1", "1,2,4", "1,,2", "x", ""]


def _values(param: Any) -> list[Any]:
    annotation = param.type_descriptor.annotation
    if param.type_descriptor.parameter_info.parser is not None:
        return [None, *_LISTS]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        members = list(annotation)
        texts = [str(m.value) for m in members]
        return [None, *members, *texts, *(t.upper() for t in texts), "xml", "", 3]
    by_type = {str: _TEXT, int: [*_INT, 5, 5.0, True], float: [*_FLOAT, 0.5, 2, True], bool: ["true", "0", 1]}
    return [None, *by_type.get(annotation, _TEXT)]


def _outcome(converter: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        result = converter.coerce(value, param=param, ctx=ctx)
    except Exception as err:  # noqa: BLE001 - the error itself is what is compared
        return "error", (type(err).__name__, getattr(err, "message", str(err)))
    return "value", (type(result), result if result == result else "nan")


@pytest.mark.parametrize("name", ["plan", "simulate"])
def test_fast_conversion_matches_typers(name: str) -> None:
    command = build_command(name, rich_markup_mode=None)
    ctx = command.make_context(name, ["x"], resilient_parsing=True)
    checked = 0
    for param in command.get_params(ctx):
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None:
            continue
        typer_converter = build_runtime_param(descriptor)
        for value in _values(param):
            light = _outcome(LightCoercion(descriptor), value, param, ctx)
            assert light == _outcome(typer_converter, value, param, ctx), (param.name, value)
            checked += 1
    assert checked > 200


def test_plan_parameters_get_the_fast_converter() -> None:
    command = build_command("plan", rich_markup_mode=None)
    ctx = command.make_context("plan", ["x"], resilient_parsing=True)
    converters = {p.name: type(p._runtime_param).__name__ for p in command.get_params(ctx)}
    assert set(converters.values()) == {"LightCoercion"}, converters
