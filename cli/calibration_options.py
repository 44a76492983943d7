"""`--calibration FILE` / `--calibrate LOG` on `hkv plan`: a user's own start-up log carried to the plan."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hkv.cli.errors import UserError
from hkv.cli.output import note
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.vllm.rules import format_version
from hkv.planner.plan_config import PlanConfig

if TYPE_CHECKING:
    from hkv.planner.budget.fitted.calibration import Calibration

# The log reader and the fit behind a calibration are imported where one is made: most plans
# have none, and they would add ~25 ms to a cold `hkv plan`.

CalibrationOpt = Annotated[str | None, typer.Option(
    "--calibration", help="a calibration file from `hkv calibrate LOG --out FILE`: that machine and release's "
                          "residual replaces the shipped average [default: none: the shipped fit]")]
CalibrateOpt = Annotated[str | None, typer.Option(
    "--calibrate", help="a vLLM start-up log of yours (same GPU and release): calibrate on it, then plan; a log "
                        "that prints no device total is taken as from the plan's --gpu [default: none]")]


def log_calibration(log_file: str, given: dict[str, Any], model: str | None = None,
                    default_gpu: str | None = None) -> Calibration:
    """The calibration of one vLLM start-up log (its model: `model`, else the one the log names; its
    GPU: given, else the one whose total the log prints, else `default_gpu`)."""
    from hkv.cli.log_file import read_log_text
    from hkv.planner.engines.vllm.log import read_vllm_log
    from hkv.planner.engines.vllm.log_calibration import calibrate_from_log

    log = read_vllm_log(read_log_text(log_file).splitlines())
    if log.memory.total is None and "gpu" not in given and default_gpu is not None:
        given = {**given, "gpu": default_gpu}
    model_name = model or log.args.get("model")
    if not model_name:
        raise UserError(f"{log_file} names no model (no 'non-default args' or engine config line): pass --model")
    return calibrate_from_log(log, load_model_spec(str(model_name)), given, Path(log_file).name)


def read_calibration_file(path: str) -> Calibration:
    from hkv.planner.budget.fitted.calibration import Calibration

    file = Path(path).expanduser()
    if not file.is_file():
        raise UserError(f"{path}: no such calibration file; write one with `hkv calibrate LOG --out FILE`")
    return Calibration.from_json(file.read_text(), where=path)


def calibrated(cfg: PlanConfig, calibration_file: str | None, calibrate_log: str | None) -> PlanConfig:
    """`cfg` with the calibration applied (stderr says when its GPU or release differ); `cfg` when none."""
    if calibration_file is not None and calibrate_log is not None:
        raise UserError("give --calibration FILE or --calibrate LOG, not both")
    if calibration_file is None and calibrate_log is None:
        return cfg
    if cfg.available_kv_memory_bytes is not None:
        raise UserError("--available-kv-memory gives the budget exactly: a calibration has nothing to correct; drop one")
    calibration = (read_calibration_file(calibration_file) if calibration_file is not None
                   else log_calibration(calibrate_log, {}, default_gpu=cfg.gpu))
    differs = calibration.mismatch(cfg.gpu if cfg.gpu_memory_bytes is None else None,
                                   format_version(cfg.vllm_rules().version))
    if differs:
        note(f"calibration from {calibration.log} holds for the machine and release it came from; this plan differs: "
             f"{differs}")
    return replace(cfg, budget_constants=calibration.apply(cfg.budget_constants))
