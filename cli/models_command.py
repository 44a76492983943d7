"""`hkv models`: the shipped catalog with each model's layer mix."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from hkv.cli.errors import handles_errors
from hkv.cli.output import OutputFormat, stdout_console, write_json
from hkv.model_specs.catalog import catalog_names
from hkv.model_specs.resolve import load_model_spec

FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="human or json")]


@handles_errors
def models_command(output_format: FormatOpt = OutputFormat.human) -> None:
    """List the catalog: names `hkv plan` accepts, layer mix, max length, size."""
    specs = [load_model_spec(name) for name in catalog_names()]
    rows = [{
        "name": s.name, "model_id": s.model_id, "model_type": s.model_type,
        "num_hidden_layers": s.num_hidden_layers, "layer_mix": s.layer_mix(),
        "max_model_len": s.max_model_len, "num_params": s.num_params, "verified": s.verified,
    } for s in specs]
    if output_format is OutputFormat.json:
        write_json({"schema_version": 1, "models": rows})
        return
    table = Table(title=f"catalog ({len(rows)} models)")
    for col in ("name", "HF id", "layers", "layer mix", "max len", "params"):
        table.add_column(col, justify="right" if col in ("layers", "max len", "params") else "left")
    for r in rows:
        mix = ", ".join(f"{n} {k}" for k, n in r["layer_mix"].items())
        name = r["name"] + ("" if r["verified"] else " [yellow](unverified)[/yellow]")
        table.add_row(name, r["model_id"], str(r["num_hidden_layers"]), mix,
                      f"{r['max_model_len']:,}", f"{r['num_params'] / 1e9:.1f}B")
    stdout_console().print(table)
