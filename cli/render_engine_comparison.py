"""Rendering of `hkv plan --engine ...`: one table with a column per engine, and its JSON document."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.engine_summary import EngineSummary
from hkv.planner.sizes import format_gib
from rich.console import Console
from rich.markup import escape
from rich.table import Table

SCHEMA_VERSION = 1
_NONE = "—"


def comparison_to_dict(model: ModelSpec, summaries: Sequence[EngineSummary],
                       details: dict[str, Any]) -> dict[str, Any]:
    """{"schema_version", "model", "engines": [EngineSummary.to_json() ...], then one key per
    engine with its full document (`details`: "vllm" the plan, "sglang" its pools and budget)}."""
    return {"schema_version": SCHEMA_VERSION, "model": model.name,
            "engines": [summary.to_json() for summary in summaries], **details}


def _count(value: int | None) -> str:
    return _NONE if value is None else f"{value:,}"


_ROWS: tuple[tuple[str, Callable[[EngineSummary], str]], ...] = (
    ("release", lambda s: s.version),
    ("one max-length request fits", lambda s: "yes" if s.fits else "[bold red]no[/bold red]"),
    ("KV memory (pools sized from)", lambda s: format_gib(s.available_kv_bytes)),
    ("max model len / context_len", lambda s: f"{s.max_model_len:,}"),
    ("KV tokens (as logged)", lambda s: f"{s.kv_cache_tokens:,}"),
    ("sliding-window pool tokens", lambda s: _count(s.swa_tokens)),
    ("state slots", lambda s: _count(s.state_slots)),
    ("fit at once (max-length requests)", lambda s: _count(s.fit_at_once)),
    ("sustained (max-length requests)", lambda s: _count(s.sustained_concurrency)),
    ("max running requests", lambda s: f"{s.max_running_requests:,}"),
)


def render_engine_comparison(model: ModelSpec, summaries: Sequence[EngineSummary], notes: Sequence[str],
                             console: Console) -> None:
    table = Table(title=f"{escape(model.name)}: engines side by side")
    table.add_column("", no_wrap=True)
    for summary in summaries:
        table.add_column(summary.engine, justify="right")
    for label, cell in _ROWS:
        table.add_row(label, *(cell(s) for s in summaries))
    console.print(table)
    for summary in summaries:
        for line in summary.logged_capacity:
            console.print(f"[dim]{summary.engine} log: {escape(line)}[/dim]")
    for line in notes:
        console.print(f"[dim]{escape(line)}[/dim]")
