"""`hkv plan --emit vllm|sglang`: the `vllm serve` command realizing the plan's vllm layout, or
SGLang's launch command realizing its plan.

Human output is the command alone on stdout (notes as `#` lines), ready to paste or redirect to
a script; JSON is the plan's document with a top-level "serve" object {argv, env, notes, command}.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Any

from hkv.cli.engine_options import gpu_assumed_note
from hkv.cli.output import OutputFormat, note, write_json
from hkv.cli.plan_options import assumed_note
from hkv.cli.render_serve import EngineCommand, shell_command, shell_script
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.sglang.launch_command import build_sglang_launch_command
from hkv.planner.engines.sglang.plan import SglangPlan
from hkv.planner.engines.vllm.serve_command import build_vllm_serve_command, model_reference
from hkv.planner.plan import Plan
from hkv.planner.plan_json import plan_to_dict

def write_serve(result: Plan, emit: Enum, output_format: OutputFormat, assumed: dict[str, Any]) -> None:
    """Raises what build_vllm_serve_command raises (vLLM would not start, no vllm layout)."""
    assert emit.value == "vllm", emit  # --emit sglang: write_launch
    _write_command(build_vllm_serve_command(result), {**plan_to_dict(result), "assumed": assumed},
                   assumed_note(assumed), output_format)


def write_launch(spec: ModelSpec, planned: SglangPlan, output_format: OutputFormat, assumed: dict[str, Any]) -> None:
    """--emit sglang: as write_serve, for SGLang's plan (JSON: {"sglang": its plan, "assumed",
    "serve"}). Raises what build_sglang_launch_command raises."""
    launch = build_sglang_launch_command(model_reference(spec), planned.args, planned.pools)
    _write_command(launch, {"sglang": planned.to_json(), "assumed": assumed}, gpu_assumed_note(assumed),
                   output_format)


def _write_command(command: EngineCommand, document: dict[str, Any], assumed_line: str | None,
                   output_format: OutputFormat) -> None:
    """JSON: `document` plus "serve"; human: the assumed note on stderr, the script on stdout."""
    if output_format is OutputFormat.json:
        write_json({**document, "serve": {"argv": list(command.argv), "env": dict(command.env),
                                          "notes": list(command.notes), "command": shell_command(command)}})
        return
    if assumed_line:
        note(assumed_line)
    sys.stdout.write(shell_script(command))
    sys.stdout.flush()
