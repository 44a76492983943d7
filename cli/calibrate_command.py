"""`hkv calibrate LOG`: one vLLM start-up log of the user's -> a calibration file `hkv plan --calibration` reads.

Exit codes: 0 written (or printed); 1 bad input (an unreadable log, one without a budget line,
a device or release hkv cannot tell, an unwritable --out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hkv.cli.calibration_options import log_calibration
from hkv.cli.errors import UserError, handles_errors
from hkv.cli.output import OutputFormat, note, stdout_console
from hkv.cli.plan_options import VllmVersionOpt
from hkv.planner.plan_config import PlanConfig

LogArg = Annotated[str, typer.Argument(help="a vLLM start-up log file (- reads standard input)")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="the log's model [default: the one the log names]")]
GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help="the log's GPU (hkv gpus) [default: the table entry whose total the log prints]")]
OutOpt = Annotated[str | None, typer.Option("--out", help="write the calibration here [default: stdout]")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="human (a summary on stdout) or json (the file)")]
GIB = 2**30


@handles_errors
def calibrate_command(log_file: LogArg, model: ModelOpt = None, gpu: GpuOpt = None,
                      vllm_version: VllmVersionOpt = None, out: OutOpt = None,
                      output_format: FormatOpt = OutputFormat.human) -> None:
    """Calibrate the blind budget on one of your vLLM start-up logs: what that machine and release took
    beyond hkv's shipped constants (non-torch, the CUDA graph estimate's scale), for `hkv plan
    --calibration FILE` on other models and flags on the same machine and release.

    Examples: hkv calibrate vllm.log --out h100.cal ; hkv plan qwen3-8b --gpu h100 --calibration h100.cal ;
    hkv plan qwen3-8b --gpu h100 --calibrate vllm.log
    """
    given = {}
    if gpu is not None:
        given["gpu"] = PlanConfig(gpu=gpu).gpu
    if vllm_version is not None:
        given["vllm_version"] = PlanConfig(vllm_version=vllm_version).vllm_version
    calibration = log_calibration(log_file, given, model)
    text = calibration.to_json()
    if out is not None:
        path = Path(out).expanduser()
        if path.is_dir() or not path.parent.is_dir():
            raise UserError(f"--out {out}: not a writable file path; name a file in an existing folder")
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)  # never a half-written calibration
        note(f"wrote {out}")
    if output_format is OutputFormat.json:
        if out is None:
            typer.echo(text, nl=False)
        return
    console = stdout_console()
    console.print(f"Calibrated on {calibration.log}: {calibration.model} on {calibration.gpu or 'a custom GPU'}, "
                  f"vLLM {calibration.vllm_version}")
    console.print(f"  overhead beyond hkv's shipped constants: {calibration.residual_bytes / GIB:+.2f} GiB per rank")
    console.print(f"  CUDA graph estimate scale: x{calibration.graph_scale:.2f}")
    if out is None:
        console.print("  (pass --out FILE to keep it; `hkv plan MODEL --calibration FILE` applies it)")
