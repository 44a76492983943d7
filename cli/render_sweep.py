"""Rich rendering of a sweep: one table, a section per GPU x TP, a row per layout."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from hkv.planner.sizes import format_gib
from hkv.planner.sweep import SweepRow

_NUMBER_COLUMNS = ("KV memory", "concurrency (logged)", "sustained")


def render_sweep(rows: tuple[SweepRow, ...], console: Console) -> None:
    first = rows[0].plan
    cfg, seq_len = first.config, first.primary.capacity.max_model_len
    max_ctx = "max context" if cfg.concurrency == 1 else f"max ctx x{cfg.concurrency}"
    table = Table(title=f"{first.model.name}: GPU x TP at {seq_len:,} tokens per request",
                  caption=f"* primary layout ({cfg.primary_layout}); fits: weights and overhead fit the GPU "
                          "(maybe: the estimate or its band's low end is short)")
    for col in ("gpu", "tp", "fits", "layout", *_NUMBER_COLUMNS, max_ctx):
        table.add_column(col, justify="left" if col in ("gpu", "fits", "layout") else "right", no_wrap=True)
    for row in rows:
        verdict = row.plan.budget.fit_verdict
        if not row.fits:
            short = f"short by {format_gib(row.plan.budget.shortfall_bytes)}"
            label = "[red]no[/red]" if verdict == "does not fit" else "[yellow]maybe[/yellow]"
            table.add_row(row.gpu, str(row.tp), label, "-", short, "-", "-", "-", end_section=True)
            continue
        names = list(row.plan.reports)
        for i, name in enumerate(names):
            cap = row.plan.reports[name].capacity
            marked = name + (" *" if name == cfg.primary_layout else "")
            table.add_row(
                row.gpu if i == 0 else "", str(row.tp) if i == 0 else "",
                ("yes" if verdict == "fits" else "[yellow]maybe[/yellow]") if i == 0 else "", marked,
                format_gib(row.plan.reports[name].layout.available_bytes), f"{cap.logged_concurrency:.2f}x",
                f"{cap.sustained_concurrency:,}", f"{cap.max_context_len_at_concurrency:,}",
                end_section=i == len(names) - 1)
    console.print(table)
