"""Rich tables of the blind-budget benchmark, for people (JSON goes out untouched)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from blind_budget.record_result import TERM_LOGS, RecordResult, pct_error


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def records_table(results: list[RecordResult]) -> Table:
    table = Table(title="Blind budget per record, out of sample: constants fitted without the record's source "
                        "(GiB per rank; % = (hkv - vLLM) / vLLM)")
    for col in ("record", "weights hkv/log", "err", "avail hkv/log", "err", "avail band", "KV tokens hkv/log", "err",
                "token band"):
        table.add_column(col, overflow="fold")
    for r in results:
        name = r.record_id + ("" if r.vllm_started else " (vLLM refused)")
        if r.error is not None:
            table.add_row(name, f"[red]plan failed: {r.error}[/red]", *[""] * 7)
            continue
        log = r.logged
        avail = f"{_num(r.available_gib)}/{_num(log.get('available_kv_gib'))}"
        avail_err = _pct(pct_error(r.available_gib, log.get("available_kv_gib")))
        if r.verdict != "fits":
            avail = f"[yellow]{r.verdict}[/yellow]/{_num(log.get('available_kv_gib'))}"
        if not r.vllm_started:
            avail_err = "[green]no-fit ok[/green]" if r.verdict != "fits" else "[red]missed[/red]"
        band = None if r.available_band_gib is None else f"{r.available_band_gib[0]:.2f}-{r.available_band_gib[1]:.2f}"
        tband = None if r.token_band is None else f"{r.token_band[0]:,}-{r.token_band[1]:,}"
        table.add_row(
            name, f"{_num(r.weights_gib)}/{_num(log.get('weights_gib'))}",
            _pct(pct_error(r.weights_gib, log.get("weights_gib"))), avail, avail_err, band or "-",
            f"{_num(r.kv_cache_tokens, '{:,}')}/{_num(log.get('kv_cache_tokens'), '{:,}')}",
            _pct(pct_error(r.kv_cache_tokens, log.get("kv_cache_tokens"))), tband or "-")
    return table


def terms_table(results: list[RecordResult]) -> Table:
    table = Table(title="Budget terms where the log gives them: hkv / vLLM (GiB per rank; graphs only where the "
                        "release subtracts the printed estimate; newer logs' activation includes that estimate)")
    table.add_column("record")
    for name in TERM_LOGS:
        table.add_column(name)
    table.add_column("graph pool (log)")
    for r in results:
        if r.error is not None or all(r.logged_term(n) is None for n in TERM_LOGS):
            continue
        cells = [f"{r.terms_gib.get(n, 0.0):.2f} / {r.logged_term(n):.2f}" if r.logged_term(n) is not None else "-"
                 for n in TERM_LOGS]
        table.add_row(r.record_id, *cells, _num(r.logged.get("cuda_graph_actual_gib")))
    return table


def summary_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [
        ("records / plan failures", f"{s['records']} / {len(s['plan_failures'])} {', '.join(s['plan_failures'])}"),
        ("MAPE available KV", f"{_num(s['available_mape_pct'], '{:.1f}%')} over {s['available_n']} "
                              f"(of {s['available_logged_n']} logging it)"),
        ("MAPE KV tokens", f"{_num(s['tokens_mape_pct'], '{:.1f}%')} over {s['tokens_n']} (of {s['tokens_logged_n']} logging it)"),
        ("false 'does not fit'", f"{len(s['false_no_fit'])} {', '.join(s['false_no_fit'])}"),
        ("refused start-ups hkv flags / misses", f"{len(s['negatives_caught'])} / {len(s['negatives_missed'])} "
                                                 f"{', '.join(s['negatives_missed'])}"),
        ("available inside hkv's band", f"{s['available_in_band']} of {s['available_n']}"),
        ("KV tokens inside hkv's token band", f"{s['tokens_in_band']} of {s['tokens_n']}"),
        ("token band median half-width", _num(s["tokens_band_half_width_median_pct"], "{:.1f}%")),
        ("weights within 1 % of the log", f"{s['weights_within_1pct']} of {s['weights_n']}; off: {', '.join(s['weights_off'])}"),
    ]
    for name, stats in s["terms"].items():
        rows.append((f"term {name}: mean error / mean |error|",
                     f"{_num(stats['mean_error_gib'], '{:+.2f}')} / {_num(stats['mean_abs_error_gib'])} GiB over {stats['n']}"))
    return rows


def summary_table(in_sample: dict[str, Any], out_of_sample: dict[str, Any]) -> Table:
    table = Table(title="Summary (records vLLM started; goal out of sample: tokens MAPE <= 2 %, 0 false no-fit, "
                        ">= 90 % in band, median band half-width <= 6 %)")
    table.add_column("metric")
    table.add_column("in sample (fit on every record)", overflow="fold")
    table.add_column("out of sample (leave one source out)", overflow="fold")
    for (name, inside), (_, outside) in zip(summary_rows(in_sample), summary_rows(out_of_sample), strict=True):
        table.add_row(name, inside, outside)
    return table


def constants_table(rows: list[tuple[str, str, str]]) -> Table:
    table = Table(title="Fitted constants (the fit on every record: hkv's shipped values) and the records each came from")
    for col in ("constant", "value", "fitted on"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def calibrated_table(s: dict[str, Any]) -> Table:
    table = Table(title="Calibrated on one start-up, scored on the others of the same source's machine and release "
                        "(goal: MAPE <= 1 %)")
    table.add_column("metric")
    table.add_column("value", overflow="fold")
    worst = s["worst"]
    for row in (
        ("pairs (calibrator, scored)", f"{s['pairs']} over {len(s['machines'])} start-ups"),
        ("MAPE available KV", f"{_num(s['available_mape_pct'], '{:.2f}%')} over {s['available_n']}"),
        ("MAPE KV tokens", f"{_num(s['tokens_mape_pct'], '{:.2f}%')} over {s['tokens_n']}"),
        ("available inside the calibrated band", f"{s['available_in_band']} of {s['available_n']}"),
        ("worst pair", "-" if worst is None else f"{worst[0]:.2f}% ({worst[2]} calibrated on {worst[1]})"),
    ):
        table.add_row(*row)
    return table


def print_report(results: list[RecordResult], in_sample: dict[str, Any], out_of_sample: dict[str, Any],
                 constants_rows: list[tuple[str, str, str]], calibrated_summary: dict[str, Any]) -> None:
    console = Console(width=200)
    console.print(records_table(results))
    console.print(terms_table(results))
    console.print(constants_table(constants_rows))
    console.print(summary_table(in_sample, out_of_sample))
    console.print(calibrated_table(calibrated_summary))
