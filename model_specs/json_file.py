"""Read a config JSON file into a dict, with one-line errors that say what was expected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hkv.model_specs.errors import InvalidConfigError, SpecNotFoundError


def read_json_object(path: Path) -> dict[str, Any]:
    """The top-level object of a JSON file (Python's parser: bare Infinity/NaN are accepted)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecNotFoundError(f"{path}: file not found; expected a config.json") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidConfigError(f"{path}: cannot read ({err}); expected a UTF-8 config.json") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidConfigError(
            f"{path}: invalid JSON at line {err.lineno} column {err.colno} ({err.msg}); "
            "expected a config.json object") from None
    if not isinstance(data, dict):
        raise InvalidConfigError(f"{path}: top-level JSON is a {type(data).__name__}; expected an object "
                                 "like config.json's {\"model_type\": ...}")
    return data
