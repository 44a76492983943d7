"""Rendering of the memory budget term by term and the anomalies of a logged start-up: a rich
table for people, plain keys (`budget_terms`, `budget_accounting`, `budget_config`,
`budget_error`, `anomalies`) for --format json."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hkv.planner.engines.vllm.log_anomalies import Anomaly
from hkv.planner.engines.vllm.log_budget_terms import BudgetComparison, TermRow
from rich.console import Console
from rich.markup import escape
from rich.table import Table

GIB = 2**30


def log_budget_to_dict(comparison: BudgetComparison | None, anomalies: Sequence[Anomaly]) -> dict[str, Any]:
    accounting = None if comparison is None else comparison.accounting
    return {
        "budget_terms": [] if comparison is None else [_row_to_dict(row) for row in comparison.rows],
        "budget_accounting": None if accounting is None else {
            "expected_rule": accounting.expected_rule, "matching_rules": list(accounting.matching_rules),
            "tested_rules": list(accounting.tested_rules), "adds_up": accounting.adds_up,
            "follows_release": accounting.follows_release, "residual_bytes": accounting.residual_bytes,
            "text": accounting.sentence},
        "budget_config": None if comparison is None else dict(comparison.config),
        "budget_error": None if comparison is None else comparison.error,
        "anomalies": [{"name": a.name, "text": a.text} for a in anomalies],
    }


def _row_to_dict(row: TermRow) -> dict[str, Any]:
    logged = row.logged
    return {
        "name": row.name,
        "logged": None if logged is None else logged.text,
        "logged_bytes": None if logged is None else logged.bytes,
        "logged_band_bytes": None if logged is None else [logged.low_bytes, logged.high_bytes],
        "hkv_bytes": row.hkv_bytes,
        "hkv_band_bytes": None if row.hkv_bytes is None else [row.hkv_low_bytes, row.hkv_high_bytes],
        "difference_bytes": row.difference_bytes,
        "source": row.source,
        "inside_band": row.inside_band,
        "note": row.note,
    }


def render_log_budget(comparison: BudgetComparison | None, anomalies: Sequence[Anomaly], console: Console) -> None:
    if comparison is not None and comparison.rows:
        table = Table(title="memory budget, term by term (hkv blind: without the logged budget)")
        for col in ("term", "vLLM logged", "hkv", "hkv - logged", "hkv source", "hkv band", "in band"):
            table.add_column(col, justify="left" if col in ("term", "hkv source") else "right")
        for row in comparison.rows:
            table.add_row(escape(row.name), escape(row.logged.text) if row.logged else "—", _gib(row.hkv_bytes),
                          _signed_gib(row.difference_bytes), escape(row.source), _band(row), _verdict(row))
        console.print(table)
        for row in comparison.mismatches:
            assert row.logged is not None
            console.print(f"[bold red]outside hkv's band[/bold red]: {escape(row.name)} logged "
                          f"{escape(row.logged.text)}, hkv {_gib(row.hkv_bytes)} ({escape(row.source)}, band "
                          f"{_band(row)}): {escape(row.note)}")
    if comparison is not None and comparison.error:
        console.print(f"[yellow]hkv could not budget this start blind: {escape(comparison.error)}[/yellow]")
    if comparison is not None and comparison.accounting is not None:
        mark = "[green]adds up[/green]" if comparison.accounting.adds_up else "[bold red]does not add up[/bold red]"
        console.print(f"vLLM's arithmetic ({mark}): {escape(comparison.accounting.sentence)}")
    for anomaly in anomalies:
        console.print(f"[bold yellow]anomaly[/bold yellow] {anomaly.name}: {escape(anomaly.text)}")


def _gib(num_bytes: int | None) -> str:
    return "—" if num_bytes is None else f"{num_bytes / GIB:,.2f} GiB"


def _signed_gib(num_bytes: int | None) -> str:
    if num_bytes is None:
        return ""
    return "0.00" if abs(num_bytes) < GIB // 200 else f"{num_bytes / GIB:+,.2f}"


def _band(row: TermRow) -> str:
    if row.hkv_low_bytes is None or row.hkv_high_bytes is None or row.hkv_low_bytes == row.hkv_high_bytes:
        return "exact" if row.hkv_bytes is not None else ""
    return f"{row.hkv_low_bytes / GIB:,.2f}-{row.hkv_high_bytes / GIB:,.2f}"


def _verdict(row: TermRow) -> str:
    inside = row.inside_band
    if not row.compared:
        return "[dim]n/a[/dim]"
    if inside is None:
        return ""
    # Words, not the ✓ / ✗ of the checks table: those marks count reproduced numbers.
    return "[green]inside[/green]" if inside else "[bold red]OUTSIDE[/bold red]"
