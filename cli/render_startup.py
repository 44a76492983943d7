"""The "start-up" section of `hkv plan`: per engine, ✓ starts or ✗ will not start with the engine's
error line and its fix, then the warnings (planner/startup)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hkv.cli.output import note

if TYPE_CHECKING:
    from rich.console import Console

    from hkv.planner.startup.issue import StartupIssue, StartupVerdict

_ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def render_startup(verdicts: Sequence[StartupVerdict], console: Console) -> None:
    for verdict in verdicts:
        name = f"{_ENGINE_NAMES.get(verdict.engine, verdict.engine)} {verdict.version}"
        if verdict.starts:
            console.print(f"[bold]start-up[/bold] {name}: [green]✓ starts[/green]")
        else:
            console.print(f"[bold]start-up[/bold] {name}: [bold red]✗ will not start[/bold red]")
        for error in verdict.errors:
            _issue(console, "✗", "red", error)
        for warning in verdict.warnings:
            _issue(console, "!", "yellow", warning)


def _issue(console: Console, mark: str, color: str, issue: StartupIssue) -> None:
    from rich.markup import escape  # here, not at the top: note_refusals (JSON output) needs no rich

    console.print(f"  [{color}]{mark}[/{color}] {escape(issue.message)} [dim]({issue.code}; {issue.releases})[/dim]")
    if issue.detail:
        console.print(f"    [dim]{escape(issue.detail)}[/dim]")
    if issue.fix:
        console.print(f"    fix: [bold]{escape(issue.fix)}[/bold]")


def note_refusals(verdicts: Sequence[StartupVerdict]) -> None:
    """One stderr line per engine that will not start."""
    for verdict in verdicts:
        line = verdict.one_line()
        if line is not None:
            note(line)
