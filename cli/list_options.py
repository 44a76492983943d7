"""`hkv plan`'s --gpu and --tp: one value, or a comma list that sweeps (planner/sweep.py).

Each list arrives as a small frozen record (typer needs a class to hand a parsed value through);
text that is not a list of the right kind is a usage error (exit 2), as a bad int is for click.
Values are checked later, where a single value is: GPU names by get_gpu, TP sizes by PlanConfig,
duplicates by sweep_configs (refused, not deduplicated: a repeated row would only be noise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from hkv.cli.plan_options import DEFAULTS


@dataclass(frozen=True)
class GpuList:
    names: tuple[str, ...]  # as typed, stripped


@dataclass(frozen=True)
class TpList:
    sizes: tuple[int, ...]


def _items(text: str) -> tuple[str, ...]:
    items = tuple(part.strip() for part in text.split(","))
    if len(items) > 1 and not all(items):  # a lone "" goes on to the single value's own check
        raise typer.BadParameter(f"{text!r} has an empty item; separate values with single commas")
    return items


def parse_gpu_list(text: str | GpuList) -> GpuList:
    return text if isinstance(text, GpuList) else GpuList(_items(text))


def parse_tp_list(text: str | TpList) -> TpList:
    if isinstance(text, TpList):
        return text
    try:
        return TpList(tuple(int(item) for item in _items(text)))
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not an integer or a comma list of integers") from None


GpuListOpt = Annotated[GpuList | None, typer.Option(
    "--gpu", parser=parse_gpu_list, metavar="NAME[,NAME...]",
    help=f"GPU name (see `hkv gpus`); a comma list (h100,h200,b200) sweeps every GPU x --tp into one table, "
         f"each name at most once [default: {DEFAULTS.gpu}, said on stderr / in JSON when assumed]")]
TpListOpt = Annotated[TpList | None, typer.Option(
    "--tp", parser=parse_tp_list, metavar="N[,N...]",
    help=f"tensor parallel size; a comma list (1,2,4) sweeps, each size at most once "
         f"[default: {DEFAULTS.tp}]")]


def first_gpu(gpus: GpuList | None) -> str | None:
    return None if gpus is None else gpus.names[0]


def first_tp(tps: TpList | None) -> int | None:
    return None if tps is None else tps.sizes[0]


def is_sweep(gpus: GpuList | None, tps: TpList | None) -> bool:
    """More than one GPU or TP size: the sweep table, not a single plan."""
    return (gpus is not None and len(gpus.names) > 1) or (tps is not None and len(tps.sizes) > 1)
