"""The `hkv` command: wires the subcommands together; each lives in its own module, imported only
when it runs (cli/lazy_commands.py), so `hkv plan` loads neither the runtime nor torch."""

from __future__ import annotations

import typer

from hkv.cli.lazy_commands import LazyCommandGroup

app = typer.Typer(
    name="hkv",
    help="Plan, simulate and run the KV cache of hybrid-attention LLMs.",
    cls=LazyCommandGroup,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain click: a usage error ends in one "Error: ..." line, help has no boxes
)


@app.callback()
def _group() -> None:
    # typer makes a group (not a lone command) only of an app with a callback or several registered
    # commands; the commands come from LazyCommandGroup, so this empty callback asks for the group.
    pass


def main() -> None:
    app()


if __name__ == "__main__":
    main()
