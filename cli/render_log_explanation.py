"""Rendering of a LogExplanation: rich for people, a plain dict for --format json."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hkv.cli.render_log_budget import log_budget_to_dict, render_log_budget
from hkv.planner.engines.log_check import LogCheck
from hkv.planner.engines.vllm.log_explanation import LogExplanation
from hkv.planner.engines.vllm.log_reasons import gib_text
from hkv.planner.plan_json import plan_to_dict
from rich.console import Console
from rich.markup import escape
from rich.table import Table

SCHEMA_VERSION = 1
_NUMBER = re.compile(r"^-?[\d,]*\.?\d+")


def explanation_to_dict(e: LogExplanation) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": e.ok,
        "model": e.plan.model.name,
        "vllm_version": e.vllm_version,
        "vllm_version_source": e.version_source,
        "layout": e.layout_name,
        "budget_band_bytes": list(e.band),
        "reproducing_budget_bytes": None if e.budget_range is None else list(e.budget_range),
        "inputs": dict(e.inputs),
        "assumptions": list(e.assumptions),
        "checks": [{"name": c.name, "logged": c.logged, "reproduced": c.reproduced, "ok": c.ok} for c in e.checks],
        "reasons": list(e.reasons),
        "plan": plan_to_dict(e.plan),
        **log_budget_to_dict(e.budget, e.anomalies),
    }


def difference(check: LogCheck) -> str:
    """"✓", or hkv's value minus the logged one where both are numbers, else "differs"."""
    if check.ok:
        return "✓"
    logged, ours = _NUMBER.match(check.logged), _NUMBER.match(check.reproduced)
    if logged and ours:
        delta = float(ours[0].replace(",", "")) - float(logged[0].replace(",", ""))
        text = f"{delta:+,.2f}".rstrip("0").rstrip(".") if delta != int(delta) else f"{int(delta):+,}"
        return f"✗ {text}"
    return "✗ differs"


def checks_table(checks: Sequence[LogCheck], engine: str) -> Table:
    """Each logged number next to hkv's, ✓ or the difference (vLLM's and SGLang's explanations)."""
    table = Table(title="logged vs reproduced")
    for col in ("number", f"{engine} logged", "hkv", ""):
        table.add_column(col, justify="left" if col == "number" else "right")
    for c in checks:
        mark = difference(c)
        table.add_row(escape(c.name), escape(c.logged), escape(c.reproduced),
                      f"[green]{mark}[/green]" if c.ok else f"[bold red]{mark}[/bold red]")
    return table


def render_explanation(e: LogExplanation, console: Console) -> None:
    source = {"log": "from the log", "option": "as given", "inferred from the numbers": "inferred from the numbers"}
    console.print(f"[bold]{escape(e.plan.model.name)}[/bold]: vLLM {e.vllm_version} "
                  f"({source.get(e.version_source, e.version_source)}), read as hkv's [bold]{e.layout_name}[/bold] "
                  f"layout; budget {gib_text(e.band[0])} to {gib_text(e.band[1])}")
    console.print(checks_table(e.checks, "vLLM"))
    render_log_budget(e.budget, e.anomalies, console)
    console.print("[bold]why[/bold]")
    for line in e.reasons:
        console.print(f"  - {escape(line)}")
    for line in e.assumptions:
        console.print(f"[dim]assumed: {escape(line)}[/dim]")
    console.print("explained: [green]yes[/green]" if e.ok else "explained: [bold red]NO[/bold red]")
