"""`hkv plan --engine vllm,sglang`: each engine's plan (vLLM: planner.plan; SGLang:
plan_sglang), summed up side by side in one table, or one JSON document (render_engine_comparison:
"engines" a list of summaries, then "vllm" the full plan document and "sglang" its pools), each
with its start-up verdict (planner/startup; JSON "startup": {engine: verdict})."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from hkv.cli.engine_options import gpu_assumed_note
from hkv.cli.errors import UserError, user_message
from hkv.cli.output import OutputFormat, note, stdout_console, write_json
from hkv.cli.plan_emit import write_launch
from hkv.cli.render_engine_comparison import comparison_to_dict, render_engine_comparison
from hkv.cli.render_startup import note_refusals, render_startup
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.engine_summary import (
    EngineSummary,
    not_fitting_summary,
    sglang_summary,
    vllm_summary,
)
from hkv.planner.engines.log_engine import SGLANG, VLLM
from hkv.planner.engines.sglang.plan import SglangPlan, plan_sglang
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.errors import DoesNotFitError
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.planner.plan_json import plan_to_dict
from hkv.planner.startup import StartupVerdict, sglang_refusal, sglang_startup, vllm_startup


def sglang_plan(spec: ModelSpec, cfg: PlanConfig, args: SglangServerArgs) -> SglangPlan:
    """SGLang's plan on the same GPU as `cfg` (its name or its given memory size; --weights-memory
    stands for what SGLang's loader takes too)."""
    return plan_sglang(spec, args, gpu=cfg.gpu, gpu_memory_bytes=cfg.gpu_memory_bytes, weights_bytes=cfg.weights_bytes)


def write_engine_plans(spec: ModelSpec, cfg: PlanConfig, engines: tuple[str, ...], args: SglangServerArgs,
                       emit: Enum | None, assumed: dict[str, Any], output_format: OutputFormat, *,
                       sweep: bool, svg: bool) -> None:
    """--emit sglang, or the side-by-side table; UserError for what they cannot combine with."""
    if sweep or svg:
        raise UserError(f"--engine {','.join(engines)} / --emit sglang plan one GPU and TP and draw no picture; "
                        "drop the --gpu / --tp lists and --svg, or plan vLLM alone")
    if emit is not None and emit.value == SGLANG:
        write_launch(spec, sglang_plan(spec, cfg, args), output_format, assumed)
        return
    if emit is not None:
        raise UserError(f"--emit {emit.value} prints one engine's command; drop --engine or --emit")
    write_engine_comparison(spec, cfg, engines, args, assumed, output_format)


# the table's column, the JSON's document, notes, the start-up verdict
EngineColumn = tuple[EngineSummary, Any, list[str], StartupVerdict]


def _vllm_column(spec: ModelSpec, cfg: PlanConfig, args: SglangServerArgs) -> EngineColumn:
    result = plan(spec, cfg)
    return vllm_summary(result), plan_to_dict(result), [], vllm_startup(result)


def _sglang_column(spec: ModelSpec, cfg: PlanConfig, args: SglangServerArgs) -> EngineColumn:
    try:
        planned = sglang_plan(spec, cfg, args)
    except DoesNotFitError as err:  # shown as a column that does not fit, as vLLM's plan shows it
        summary = not_fitting_summary(SGLANG, args.version, args.context_length or spec.max_model_len)
        return (summary, {"error": user_message(err)}, [f"sglang: {user_message(err)}"],
                sglang_refusal(err, args.version))
    notes = [f"sglang: {line}" for line in (*planned.notes, *_vllm_only_budget(cfg))]
    return sglang_summary(planned), planned.to_json(), notes, sglang_startup(planned)


_COLUMNS: dict[str, Callable[[ModelSpec, PlanConfig, SglangServerArgs], EngineColumn]] = {
    VLLM: _vllm_column, SGLANG: _sglang_column}


def write_engine_comparison(spec: ModelSpec, cfg: PlanConfig, engines: tuple[str, ...], args: SglangServerArgs,
                            assumed: dict[str, Any], output_format: OutputFormat) -> None:
    summaries: list[EngineSummary] = []
    details: dict[str, Any] = {}
    notes: list[str] = []
    verdicts: list[StartupVerdict] = []
    for engine in engines:
        summary, detail, engine_notes, verdict = _COLUMNS[engine](spec, cfg, args)
        summaries.append(summary)
        details[engine] = detail
        notes += engine_notes
        verdicts.append(verdict)
    # an SGLang refusal is already a note beside the table: stderr says the vLLM one
    note_refusals([v for v in verdicts if v.engine != SGLANG])
    if output_format is OutputFormat.json:
        write_json({**comparison_to_dict(spec, summaries, details),
                    "startup": {v.engine: v.to_json() for v in verdicts}, "assumed": assumed})
        return
    line = gpu_assumed_note(assumed)
    if line:
        note(line)
    console = stdout_console()
    render_engine_comparison(spec, summaries, notes, console)
    render_startup(verdicts, console)


def _vllm_only_budget(cfg: PlanConfig) -> list[str]:
    """The budget options SGLang's plan does not read, when given."""
    given = [flag for flag, value in (("--available-kv-memory", cfg.available_kv_memory_bytes),
                                      ("--gpu-memory-utilization", cfg.gpu_memory_utilization)) if value is not None]
    if not given:
        return []
    verb = "set" if len(given) > 1 else "sets"
    return [f"{' and '.join(given)} {verb} vLLM's budget only; SGLang's comes from the card and --mem-fraction-static"]
