"""`hkv gpus`: the GPU memory table."""

from __future__ import annotations

from typing import Annotated

import typer
from hkv.cli.errors import handles_errors
from hkv.cli.output import OutputFormat, stdout_console, write_json
from hkv.planner.budget.gpu_table import GPUS, default_max_num_batched_tokens
from hkv.planner.engines.vllm.rules import DEFAULT_VLLM_VERSION, VllmRules
from hkv.planner.sizes import format_gib
from rich.table import Table

FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="human or json")]


@handles_errors
def gpus_command(output_format: FormatOpt = OutputFormat.human) -> None:
    """List the GPUs `--gpu` accepts, with the memory total the planner uses."""
    gb10_small_tier = VllmRules.for_version(DEFAULT_VLLM_VERSION).gb10_small_batch_tier
    rows = [{
        "name": g.name, "description": g.description, "total_bytes": g.total_bytes,
        "total_source": g.total_source, "nvml_mib": g.nvml_mib, "hbm_bandwidth_gbps": g.hbm_bandwidth_gbps,
        "default_max_num_batched_tokens": default_max_num_batched_tokens(g.total_bytes,
                                                                         g.small_batch_tier(gb10_small_tier)),
        "verified": g.verified, "unified_memory": g.unified_memory,
        "compute_capability": None if g.compute_capability is None else ".".join(map(str, g.compute_capability)),
    } for g in GPUS]
    if output_format is OutputFormat.json:
        write_json({"schema_version": 1, "gpus": rows})
        return
    table = Table(title="GPUs")
    for col in ("--gpu", "device", "total", "source", "bandwidth", "default mnbt"):
        table.add_column(col, justify="right" if col in ("total", "bandwidth", "default mnbt") else "left")
    for r in rows:
        table.add_row(r["name"], r["description"] + ("" if r["verified"] else " (unverified)")
                      + (f" sm{r['compute_capability'].replace('.', '')}" if r["compute_capability"] else ""),
                      format_gib(r["total_bytes"]), r["total_source"], f"{r['hbm_bandwidth_gbps']:,} GB/s",
                      f"{r['default_max_num_batched_tokens']:,}")
    stdout_console().print(table)
