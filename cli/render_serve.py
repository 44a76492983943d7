"""An engine's command (vLLM's ServeCommand, SGLang's LaunchCommand) -> the shell text people paste:
env assignments, then the program (`vllm serve MODEL`, `python3 -m sglang.launch_server`), then one
flag (with its value) per line, backslash-continued; every word shell-quoted."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Protocol


class EngineCommand(Protocol):
    """What both engines' commands hold: argv (the program's three words first), env, notes."""

    @property
    def argv(self) -> tuple[str, ...]: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def notes(self) -> tuple[str, ...]: ...


def shell_command(serve: EngineCommand) -> str:
    """One command: `A=1 \\` lines first (they apply to this command only), then argv."""
    head = [f"{name}={shlex.quote(value)}" for name, value in serve.env.items()]
    program, flags = serve.argv[:3], serve.argv[3:]
    head.append(" ".join(shlex.quote(word) for word in program))
    return " \\\n".join(head + [f"  {shlex.join(group)}" for group in _flag_groups(flags)])


def shell_script(serve: EngineCommand) -> str:
    """The notes as `#` comment lines above the command (human output of --emit)."""
    return "".join(f"# {note}\n" for note in serve.notes) + shell_command(serve) + "\n"


def _flag_groups(flags: tuple[str, ...]) -> list[tuple[str, ...]]:
    """("--a", "1", "--b", "--c", "x") -> [("--a", "1"), ("--b",), ("--c", "x")]."""
    groups: list[tuple[str, ...]] = []
    for word in flags:
        if word.startswith("--") or not groups:
            groups.append((word,))
        else:
            groups[-1] += (word,)
    return groups
