"""`hkv plan` with a --gpu or --tp list: one plan per GPU x TP (planner/sweep.py), one table or
one JSON document with a top-level "sweep" list. --emit is refused: a serve command is for one
GPU type and one TP size."""

from __future__ import annotations

from enum import Enum

from hkv.cli.errors import UserError
from hkv.cli.list_options import GpuList, TpList
from hkv.cli.output import OutputFormat, note, stdout_console, write_json
from hkv.cli.plan_options import PlanOptions, assumed_note
from hkv.cli.render_sweep import render_sweep
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.plan_config import PlanConfig
from hkv.planner.sweep import sweep
from hkv.planner.sweep_json import sweep_to_dict


def write_sweep(spec: ModelSpec, base: PlanConfig, gpus: GpuList | None, tps: TpList | None,
                options: PlanOptions, emit: Enum | None, output_format: OutputFormat) -> None:
    """`base` is the config of the first GPU and TP (or the defaults where a list was not given)."""
    gpu_names = (base.gpu or "",) if gpus is None else gpus.names
    tp_sizes = (base.tp,) if tps is None else tps.sizes
    if emit is not None:
        raise UserError(f"--emit {emit.value} needs one --gpu and one --tp (a serve command is for one GPU "
                        f"type and TP size); got {len(gpu_names)} GPU(s) x {len(tp_sizes)} TP size(s)")
    rows = sweep(spec, base, gpu_names, tp_sizes)
    assumed = options.assumed(rows[0].plan.budget)
    if output_format is OutputFormat.json:
        write_json({**sweep_to_dict(rows), "assumed": assumed})
        return
    line = assumed_note(assumed)
    if line:
        note(line)
    render_sweep(rows, stdout_console())
