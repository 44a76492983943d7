"""The subcommands of `hkv`, each imported only when it is the one to run (or help lists them all).

A command module pulls in its own libraries (the runtime, torch for `run`, the log parsers for
`explain-log`...), so importing every command to run one cost `hkv plan` most of its start-up.
COMMANDS names each command's module and function instead; LazyCommandGroup looks a command up
there on first use and builds it then. `hkv --help`, a typo's "did you mean", and shell completion
see every name, in this order, as they did when all commands were registered eagerly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from hkv.cli.light_coercion import install_light_coercion

# name -> (module, function), in the order `hkv --help` lists them.
COMMANDS: Mapping[str, tuple[str, str]] = {
    "plan": ("hkv.cli.plan_command", "plan_command"),
    "models": ("hkv.cli.models_command", "models_command"),
    "gpus": ("hkv.cli.gpus_command", "gpus_command"),
    "simulate": ("hkv.cli.simulate_command", "simulate_command"),
    "run": ("hkv.cli.run_command", "run_command"),
    "verify": ("hkv.cli.verify_command", "verify_command"),
    "explain-log": ("hkv.cli.explain_log_command", "explain_log_command"),
    "calibrate": ("hkv.cli.calibrate_command", "calibrate_command"),
}


def build_command(name: str, *, rich_markup_mode: Any) -> Any:
    """The click command typer makes of COMMANDS[name], as the app's group would have made it,
    but a LightCommand: option values converted without pydantic where that is exact."""
    module_name, function_name = COMMANDS[name]
    function = getattr(import_module(module_name), function_name)
    # A one-command Typer is the public way to have typer build a single command; its settings
    # are the ones the group passes to its own commands (pretty_exceptions_short keeps its default).
    single = typer.Typer(rich_markup_mode=rich_markup_mode, add_completion=False,
                         pretty_exceptions_enable=False)
    single.command(name, cls=LightCommand)(function)
    return typer.main.get_command(single)


class LightCommand(TyperCommand):
    """typer's command whose parameters (--help included, which click adds late) convert values
    without pydantic where that is exact."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        install_light_coercion(params)
        return params


class LazyCommands(Mapping[str, Any]):
    """COMMANDS as the group's `commands` mapping: the names are known up front, each command is
    built on first lookup and kept. Read-only: the app's commands are COMMANDS, nothing else."""

    def __init__(self, rich_markup_mode: Any) -> None:
        self._rich_markup_mode = rich_markup_mode
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in COMMANDS:
            raise KeyError(name)
        if name not in self._built:
            self._built[name] = build_command(name, rich_markup_mode=self._rich_markup_mode)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class LazyCommandGroup(TyperGroup):
    """typer's group with LazyCommands as its commands (typer builds it with none registered)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(self.rich_markup_mode)  # type: ignore[assignment]

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)  # the names alone: typer's version would build every command

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        install_light_coercion(params)  # the group's own --help
        return params
