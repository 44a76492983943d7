"""`hkv plan --emit vllm`: the `vllm serve` command realizing the plan's vllm layout.

Human output is the command alone on stdout (notes as `#` lines), ready to paste or redirect to
a script; JSON is the plan's document with a top-level "serve" object {argv, env, notes, command}.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated, Any

import typer
from hkv.cli.choices import Emit
from hkv.cli.output import OutputFormat, note, write_json
from hkv.cli.plan_options import assumed_note
from hkv.cli.render_serve import shell_command, shell_script
from hkv.planner.engines.vllm.serve_command import build_vllm_serve_command
from hkv.planner.plan import Plan
from hkv.planner.plan_json import plan_to_dict

EmitOpt = Annotated[Emit | None, typer.Option(  # type: ignore[valid-type]
    "--emit", help="print the `vllm serve` command (env vars, flags) that realizes the vllm layout instead "
                   "of the tables (JSON: the plan plus a \"serve\" object); needs one --gpu and one --tp "
                   "[default: none, the plan]")]


def write_serve(result: Plan, emit: Enum, output_format: OutputFormat, assumed: dict[str, Any]) -> None:
    """Raises what build_vllm_serve_command raises (vLLM would not start, no vllm layout)."""
    assert emit.value == "vllm", emit  # the only choice of Emit
    serve = build_vllm_serve_command(result)
    if output_format is OutputFormat.json:
        write_json({**plan_to_dict(result), "assumed": assumed, "serve": {
            "argv": list(serve.argv), "env": dict(serve.env), "notes": list(serve.notes),
            "command": shell_command(serve)}})
        return
    line = assumed_note(assumed)
    if line:
        note(line)
    sys.stdout.write(shell_script(serve))
    sys.stdout.flush()
