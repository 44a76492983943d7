"""Rich rendering of a Plan: model, budget, layouts side by side, the primary layout's groups."""

from __future__ import annotations

from itertools import groupby

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from hkv.cli.render_layout_picture import layout_picture
from hkv.cli.render_startup import render_startup
from hkv.planner.layout import Layout
from hkv.planner.plan import LayoutReport, Plan
from hkv.planner.sizes import format_bytes, format_gib
from hkv.planner.startup import StartupVerdict


def describe_groups(layout: Layout) -> str:
    """Compact group summary: groups x layers per group, e.g. "6x8-9 sliding + 1x10 full"."""
    parts = []
    for kind, members in groupby(layout.groups, key=lambda g: (g.kind.value, g.pool_id)):
        sizes = [g.num_layers for g in members]
        shown = str(sizes[0]) if len(set(sizes)) == 1 else f"{min(sizes)}-{max(sizes)}"
        parts.append(f"{len(sizes)}x{shown} {kind[0]}")
    return " + ".join(parts) if parts else "none"


_TERM_LABELS = {"weights": "weights per GPU", "activation": "profile peak (activations, sampler)",
                "cudagraph": "CUDA graph estimate", "non_torch": "non-torch (context, NCCL)",
                "calibration": "calibration (your start-up log)"}


def render_plan(plan: Plan, console: Console, startup: StartupVerdict | None = None) -> None:
    """The plan; `startup` (vLLM's verdict) closes it with the start-up section."""
    model, budget, cfg = plan.model, plan.budget, plan.config
    mix = ", ".join(f"{n} {k}" for k, n in model.layer_mix().items())
    flag = "" if model.verified else "  [yellow](unverified config)[/yellow]"
    console.print(Panel.fit(
        f"[bold]{model.name}[/bold]  {model.model_id}  ({model.model_type}){flag}\n"
        f"{model.num_hidden_layers} layers: {mix}\n"
        f"max_model_len {cfg.max_model_len or model.max_model_len:,}  |  "
        f"{model.num_params / 1e9:.2f} B params, checkpoint {format_gib(model.weights_bytes)}"
        f"{' (exact, safetensors)' if model.weights_bytes_exact is not None else ''}",
        title="model"))

    table = Table(title="memory budget per GPU", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    if budget.exact:
        table.add_row("available KV memory (given)", format_gib(budget.available_bytes))
    else:
        table.add_row(f"{budget.device} total x {budget.gpu_memory_utilization:g}",
                      f"{format_gib(budget.total_bytes)} x {budget.gpu_memory_utilization:g} = "
                      f"{format_gib(budget.requested_bytes)}")
        for term in budget.terms:
            band = "" if term.is_exact else f"  [dim]({format_gib(term.low_bytes)}-{format_gib(term.high_bytes)})[/dim]"
            sign = "+" if term.bytes < 0 else "-"  # a signed term may give memory back
            table.add_row(f"{_TERM_LABELS.get(term.name, term.name)} [dim]({term.source})[/dim]",
                          f"{sign} {format_gib(abs(term.bytes))}{band}")
        low, high = budget.available_band
        band = "" if low == high else f"  [dim]({format_gib(low)}-{format_gib(high)})[/dim]"
        table.add_row(f"available KV memory [dim]({budget.fit_verdict})[/dim]",
                      f"[bold]{format_gib(budget.available_bytes)}[/bold]{band}")
    table.add_row("max_num_batched_tokens", f"{budget.max_num_batched_tokens:,}")
    if plan.block is not None:
        table.add_row("KV block size (tokens)", f"{plan.block.block_size} ({plan.block.why})")
    console.print(table)

    names = list(plan.reports)
    cmp = Table(title=f"layouts at {plan.primary.capacity.max_model_len:,} tokens per request")
    cmp.add_column("", no_wrap=True)
    for name in names:
        style = "bold green" if name == cfg.primary_layout else ""
        cmp.add_column(name + (" *" if name == cfg.primary_layout else ""), justify="right", style=style)
    rows = [
        ("groups", lambda r: describe_groups(r.layout)),
        ("block (tokens)", lambda r: "/".join(sorted({str(g.block_size) for g in r.layout.groups}, key=int))),
        ("bytes/block", lambda r: " + ".join(format_bytes(p.bytes_per_block) for p in r.layout.pools)),
        ("blocks", lambda r: " + ".join(f"{p.num_blocks:,}" for p in r.layout.pools)),
        ("pad slots", lambda r: str(r.layout.padding_slots())),
        ("waste", lambda r: f"{r.waste_fraction:.1%}"),
        ("blocks/request", lambda r: f"{r.capacity.blocks_per_request:,}"),
        ("concurrency (logged)", lambda r: f"{r.capacity.logged_concurrency:.2f}x"),
        ("  band", lambda r: _band(r, "logged_concurrency", "{:.2f}x")),
        ("sustained", lambda r: f"{r.capacity.sustained_concurrency:,}"),
        ("  band", lambda r: _band(r, "sustained_concurrency", "{:,}")),
        ("physical limit", lambda r: f"{r.capacity.physical_limit_concurrency:.2f}x"),
        ("fit at once", lambda r: f"{r.capacity.max_num_requests:,}"),
        ("KV tokens", lambda r: f"{r.capacity.kv_cache_tokens:,}"),
        ("  band", lambda r: _band(r, "kv_cache_tokens", "{:,}")),
        ("max context", lambda r: f"{r.capacity.max_context_len:,}"),
    ]
    if cfg.concurrency > 1:
        rows.append((f"max ctx x{cfg.concurrency}",
                     lambda r: f"{r.capacity.max_context_len_at_concurrency:,}"))
    def _band(report: LayoutReport, field: str, fmt: str) -> str:
        band = plan.bands.get(report.layout.name)  # a layout's name is its report's key
        if band is None:
            return ""
        if getattr(band, field) is None:
            return ""
        low, high = getattr(band, field)
        return "" if low == high else f"[dim]{fmt.format(low)}-{fmt.format(high)}[/dim]"

    for label, cell in rows:
        if label == "  band" and not plan.bands:
            continue  # an exact budget: no ranges
        cmp.add_row(label, *(cell(plan.reports[n]) for n in names))
    console.print(cmp)
    for report in plan.reports.values():
        console.print(layout_picture(report.layout))

    primary = plan.primary.layout
    groups = Table(title=f"{primary.name} groups")
    for col in ("#", "kind", "layers", "pool", "block size", "page", "blocks/request"):
        groups.add_column(col, justify="right" if col not in ("kind", "layers") else "left")
    for i, g in enumerate(primary.groups):
        layers = ",".join(map(str, g.layer_ids))
        groups.add_row(str(i), g.kind.value, layers if len(layers) < 48 else layers[:45] + "...",
                       str(g.pool_id), str(g.block_size), format_bytes(g.page_size_bytes),
                       f"{g.blocks_per_request(primary.max_model_len, primary.in_flight_tokens):,}")
    console.print(groups)
    for name, report in plan.reports.items():
        for line in report.layout.notes:
            console.print(f"[dim]{name}: {line}[/dim]")
        for line in report.log_lines:
            console.print(f"[dim]{name} log: {line}[/dim]")
    for name, why in plan.skipped.items():
        console.print(f"[dim]{name}: not applicable ({why})[/dim]")
    if not budget.exact:
        console.print("[dim]overheads are estimates; pass --available-kv-memory for an exact budget[/dim]")
    if startup is not None:
        render_startup((startup,), console)
