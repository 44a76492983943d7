"""Layouts that could not replay a workload: what `hkv simulate` keeps for each (JSON via
asdict) and the table shown after the finished layouts' results."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.table import Table


@dataclass(frozen=True)
class LayoutFailure:
    """`reason`: the one-line message (it names the request and its tokens, or the pool that
    holds no block). `num_finished`: requests the layout finished before it stopped."""

    layout: str
    reason: str
    num_finished: int


def render_simulation_failures(failures: list[LayoutFailure], console: Console) -> None:
    if not failures:
        return
    table = Table(title="layouts that could not replay the workload")
    for col in ("layout", "finished before", "reason"):
        table.add_column(col, justify="right" if col == "finished before" else "left",
                         overflow="fold")
    for f in failures:
        table.add_row(f.layout, f"{f.num_finished:,}", f.reason)
    console.print(table)
