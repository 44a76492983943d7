"""`hkv plan --svg FILE`: the human report, layout pictures included, saved as an SVG image.

The SVG is rich's own export of a recording console (Console(record=True), save_svg), so it shows
exactly what `render_plan` prints; nothing here draws SVG by hand. It is rendered apart from stdout,
so it is the human report whatever --format prints there (with --format json, stdout keeps the JSON).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hkv.cli.errors import UserError

if TYPE_CHECKING:
    from hkv.planner.plan import Plan

SvgOpt = Annotated[str | None, typer.Option(
    "--svg", metavar="FILE", help="also save the human report (tables and layout pictures) as an SVG image; "
                                  "with --format json too, stdout keeping the JSON; not with --emit or a "
                                  "--gpu/--tp sweep [default: none, no SVG]")]


def checked_svg_path(svg: str | None, *, sweep: bool, emit: bool) -> Path | None:
    """The --svg path, None without one. Checked before any planning, so that a bad path stops
    the command before anything is printed or written. UserError (exit 1) with a sweep or --emit
    (neither prints the plan report), for a directory, and for a missing or read-only directory."""
    if svg is None:
        return None
    if sweep or emit:
        raise UserError("--svg saves the report of one plan; it does not combine with --emit or several "
                        "--gpu/--tp values: drop --svg, or give one --gpu and one --tp without --emit")
    path = Path(svg).expanduser()
    if path.is_dir():
        raise UserError(f"--svg {svg} is a directory; give a file path such as {path / 'plan.svg'}")
    if not path.parent.is_dir():
        raise UserError(f"--svg {svg}: directory {path.parent} does not exist; create it or give a file "
                        "in an existing directory")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"--svg {svg} cannot be written (no permission); give a file in a writable directory")
    return path


def save_svg(result: Plan, path: Path) -> None:
    """Render `result`'s human report into a recording console off stdout, as wide as stdout's
    page, and save it at `path`. UserError when the file cannot be written after all."""
    # rich and the renderers load here, not at the top: checked_svg_path runs on every plan
    from rich.console import Console

    from hkv.cli.output import stdout_console
    from hkv.cli.render_plan import render_plan

    console = Console(file=io.StringIO(), record=True, highlight=False, width=stdout_console().width)
    render_plan(result, console)
    try:
        console.save_svg(str(path), title=f"hkv plan {result.model.name}")
    except OSError as err:
        raise UserError(f"--svg {path} cannot be written ({err.strerror}); give another file") from err
