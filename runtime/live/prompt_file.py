"""Prompt files for `hkv run`: plain text (one prompt) or JSONL (one prompt per line).

The format is given (`text`, `jsonl`) or guessed (`auto`): a file whose first non-blank character
is `{` is JSONL. In JSONL each non-blank line is an object with exactly one of `"prompt": "text"`
or `"token_ids": [int, ...]` (both non-empty). A text file is one prompt, the whole file, less one
trailing newline. Errors name the file and the line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, NamedTuple

from hkv.model_specs.errors import InputError


class PromptFileError(InputError):
    """The prompt file is empty, binary or malformed (one line, naming the file and line)."""


PromptFormat = Literal["auto", "text", "jsonl"]
PROMPT_FORMATS: tuple[PromptFormat, ...] = ("auto", "text", "jsonl")


class Prompt(NamedTuple):
    text: str | None  # a text prompt (needs a tokenizer)
    token_ids: tuple[int, ...] | None  # or token ids, used as given


def read_prompt_file(path: str | Path, prompt_format: PromptFormat = "auto") -> list[Prompt]:
    """The prompts of a file in `prompt_format`; PromptFileError on any bad input."""
    file = Path(path)
    if file.is_dir():
        raise PromptFileError(f"{path}: is a directory, not a prompt file")
    if not file.exists():
        raise PromptFileError(f"{path}: no such prompt file")
    try:
        data = file.read_bytes()
    except OSError as err:
        raise PromptFileError(f"{path}: cannot read the prompt file ({err.strerror})") from None
    if b"\x00" in data:
        raise PromptFileError(f"{path}: binary file (NUL bytes); expected UTF-8 text or JSONL")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PromptFileError(f"{path}: not UTF-8 text (byte {err.start}); expected text or JSONL") from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise PromptFileError(f"{path}: empty prompt file")
    if prompt_format == "jsonl" or (prompt_format == "auto" and text.lstrip().startswith("{")):
        return _read_jsonl(path, text)
    return [Prompt(text.removesuffix("\n"), None)]


def _read_jsonl(path: str | Path, text: str) -> list[Prompt]:
    prompts = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise PromptFileError(f"{where}: invalid JSON ({err.msg})") from None
        prompts.append(_prompt_of(where, obj))
    return prompts


def _prompt_of(where: str, obj: object) -> Prompt:
    if not isinstance(obj, dict):
        raise PromptFileError(f"{where}: expected an object with \"prompt\" or \"token_ids\"")
    keys = {"prompt", "token_ids"} & set(obj)
    if len(keys) != 1:
        raise PromptFileError(f"{where}: expected exactly one of \"prompt\" or \"token_ids\", got keys "
                              f"{sorted(obj)}")
    if "prompt" in obj:
        value = obj["prompt"]
        if not isinstance(value, str) or not value:
            raise PromptFileError(f"{where}: \"prompt\" must be a non-empty string")
        return Prompt(value, None)
    ids = obj["token_ids"]
    if (not isinstance(ids, list) or not ids
            or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids)):
        raise PromptFileError(f"{where}: \"token_ids\" must be a non-empty list of non-negative integers")
    return Prompt(None, tuple(ids))
