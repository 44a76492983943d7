"""The `hkv` command: wires the subcommands together; each lives in its own module."""

from __future__ import annotations

import typer

from hkv.cli.calibrate_command import calibrate_command
from hkv.cli.explain_log_command import explain_log_command
from hkv.cli.gpus_command import gpus_command
from hkv.cli.models_command import models_command
from hkv.cli.plan_command import plan_command
from hkv.cli.run_command import run_command
from hkv.cli.simulate_command import simulate_command
from hkv.cli.verify_command import verify_command

app = typer.Typer(
    name="hkv",
    help="Plan, simulate and run the KV cache of hybrid-attention LLMs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain click: a usage error ends in one "Error: ..." line, help has no boxes
)
app.command("plan")(plan_command)
app.command("models")(models_command)
app.command("gpus")(gpus_command)
app.command("simulate")(simulate_command)
app.command("run")(run_command)
app.command("verify")(verify_command)
app.command("explain-log")(explain_log_command)
app.command("calibrate")(calibrate_command)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
