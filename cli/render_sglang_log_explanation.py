"""Rendering of an SGLang log explanation: rich for people, a plain dict for --format json."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from hkv.cli.render_log_explanation import checks_table
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.sglang.log_explanation import SglangLogExplanation, band_text
from rich.console import Console
from rich.markup import escape

SCHEMA_VERSION = 1


def sglang_explanation_to_dict(e: SglangLogExplanation, model: ModelSpec) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "engine": "sglang",
        "ok": e.ok,
        "model": model.name,
        "sglang_version": e.args.version,
        "budget_band_bytes": list(e.band),
        "budget_source": e.band_source,
        "reproducing_budget_bytes": e.pools.available_bytes if e.budget_found and e.pools else None,
        "inputs": asdict(e.args),
        "assumptions": list(e.assumptions),
        "checks": [{"name": c.name, "logged": c.logged, "reproduced": c.reproduced, "ok": c.ok} for c in e.checks],
        "pools": None if e.pools is None else e.pools.to_json(),
    }


def render_sglang_explanation(e: SglangLogExplanation, model: ModelSpec, console: Console) -> None:
    found = f"reproduced at {e.pools.available_bytes:,} B" if e.budget_found and e.pools else \
        "no budget in it gives the logged pool (hkv's figures at its nearest end)"
    fraction = "not given" if e.args.mem_fraction_static is None else f"{e.args.mem_fraction_static}"
    console.print(f"[bold]{escape(model.name)}[/bold]: SGLang {escape(e.args.version)}, "
                  f"mem_fraction_static {fraction}; budget (profiled rest) {band_text(e.band)} "
                  f"[dim]({escape(e.band_source)})[/dim], {found}")
    console.print(checks_table(e.checks, "SGLang"))
    for line in e.assumptions:
        console.print(f"[dim]assumed: {escape(line)}[/dim]")
    console.print("explained: [green]yes[/green]" if e.ok else "explained: [bold red]NO[/bold red]")
