"""Human output of `hkv run`: progress on stderr, generations streamed to stdout, the report."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn,
)
from rich.table import Table

from hkv.cli.output import stderr_console
from hkv.planner.sizes import format_bytes
from hkv.runtime.live.live_run import Generation, RunObserver, RunOutcome
from hkv.runtime.live.run_report import RunReport
from hkv.runtime.live.stream_decoder import StreamDecoder


def completion_text(generation: Generation, tokenizer: Any | None) -> str:
    if tokenizer is None:
        return " ".join(str(t) for t in generation.output_token_ids)
    return tokenizer.decode(generation.output_token_ids, skip_special_tokens=True)


class RunProgress(RunObserver):
    """Loading spinner and prefill bar on stderr (`show`, a terminal only); with `stream`, one
    prompt's text is written to stdout token by token, several prompts' when each finishes."""

    def __init__(self, tokenizer: Any | None, num_prompts: int, *, show: bool, stream: bool) -> None:
        self.tokenizer = tokenizer
        self.num_prompts = num_prompts
        self.show = show
        self.stream = stream
        self.load_s = 0.0
        self._progress: Progress | None = None
        self._task: Any = None
        self._decoder = StreamDecoder(self._decode)

    def _decode(self, token_ids: Any) -> str:
        if self.tokenizer is None:
            return "".join(f"{t} " for t in token_ids)
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)

    @contextmanager
    def loading(self) -> Iterator[None]:
        start = time.perf_counter()
        if self.show:
            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(), console=stderr_console(),
                                      transient=True)
            self._progress.start()
            self._task = self._progress.add_task("loading model", total=None)
        yield
        self.load_s = time.perf_counter() - start

    def on_prefill(self, num_done: int, num_total: int) -> None:
        if self._progress is None:
            return
        self._progress.update(self._task, description="prefill (prompt tokens)", completed=num_done,
                              total=num_total)
        if num_done >= num_total:
            self.close()

    def on_token(self, generation: Generation, token_id: int) -> None:
        if not self.stream or self.num_prompts != 1:
            return
        self.close()
        sys.stdout.write(self._decoder.push(generation.output_token_ids))
        sys.stdout.flush()

    def on_finish(self, generation: Generation) -> None:
        if not self.stream:
            return
        if self.num_prompts == 1:
            sys.stdout.write(self._decoder.finish(generation.output_token_ids))
            sys.stdout.write(f"\n[{generation.finish_reason}, {len(generation.output_token_ids)} tokens]\n\n")
        else:
            index = int(generation.request_id) + 1
            sys.stdout.write(f"--- prompt {index} ({generation.finish_reason}, "
                             f"{len(generation.output_token_ids)} tokens) ---\n"
                             f"{completion_text(generation, self.tokenizer)}\n\n")
        sys.stdout.flush()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def render_timings(outcome: RunOutcome, load_s: float, console: Console) -> None:
    t = outcome.timings
    num_out = sum(len(g.output_token_ids) for g in outcome.generations)
    console.print(f"{len(outcome.generations)} prompt(s), {num_out:,} tokens generated in "
                  f"{t.num_steps:,} steps; "
                  f"load {load_s:.2f} s, prefill {t.prefill_tokens_per_s:,.1f} tokens/s, "
                  f"decode {t.decode_tokens_per_s:,.1f} tokens/s")


def _state_table(report: RunReport) -> Table:
    states = Table(title="recurrent state: planned vs measured")
    for col in ("group", "variant", "layers", "pool", "state bytes plan / alloc", "states / request plan / peak",
                "checkpoints kept", "copies", "hits restored"):
        states.add_column(col, justify="left" if col == "variant" else "right")
    for s in report.states:
        states.add_row(str(s.group_id), s.variant, str(s.num_layers), str(s.pool_id),
                       f"{s.planned_state_bytes:,} / {s.measured_state_bytes:,}",
                       f"{s.planned_states_per_request} / {s.peak_states_per_request}",
                       f"{s.checkpoints_kept:,}", f"{s.state_copies:,}", f"{s.checkpoints_restored:,}")
    return states


def render_report(report: RunReport, console: Console) -> None:
    console.print(f"KV cache: {report.layout} layout, budget {format_bytes(report.kv_memory_bytes)}, "
                  f"allocated "
                  f"{format_bytes(report.allocated_bytes)}; max_model_len {report.max_model_len:,}, "
                  f"in-flight allowance {report.in_flight_tokens:,} tokens")
    console.print(f"capacity at {report.request_len:,} tokens per request: logged {report.logged_concurrency:,.2f}x, "
                  f"sustained {report.sustained_concurrency:,} (predicted), "
                  f"physical limit {report.physical_limit_concurrency:,.2f}x")
    groups = Table(title="groups: planned blocks per request vs measured")
    for col in ("#", "kind", "layers", "block", "pool", "planned / request", "peak / request", "peak in use",
                "released early"):
        groups.add_column(col, justify="left" if col == "kind" else "right")
    for g in report.groups:
        groups.add_row(str(g.group_id), g.kind, str(g.num_layers), str(g.block_size), str(g.pool_id),
                       str(g.predicted_blocks_per_request), str(g.peak_blocks_per_request),
                       f"{g.peak_blocks_in_use:,}", f"{g.early_released_blocks:,}")
    console.print(groups)
    pools = Table(title="pools")
    for col in ("pool", "kind", "blocks", "bytes / block", "peak in use"):
        pools.add_column(col, justify="left" if col == "kind" else "right")
    for p in report.pools:
        pools.add_row(str(p.pool_id), p.kind, f"{p.num_blocks:,}", f"{p.bytes_per_block:,}",
                      f"{p.peak_blocks_in_use:,}")
    console.print(pools)
    if report.states:
        console.print(_state_table(report))
    console.print(f"prefix cache: {report.num_hit_tokens:,} of {report.num_query_tokens:,} prompt tokens "
                  f"hit; "
                  f"preemptions {report.num_preemptions}")
    if report.fill is not None:
        f = report.fill
        trials = ", ".join(f"N={t.num_requests}: {t.peak_running}/{t.num_preemptions}" for t in f.trials)
        console.print(f"fill: copies of {f.prompt_len:,} prompt + {f.output_len:,} output tokens; sustained "
                      f"predicted {f.predicted_sustained:,}, measured {f.measured_sustained:,}"
                      f"{' (capped by max_num_seqs)' if f.capped else ''}; trials (most running / "
                      f"preemptions): {trials}")
    for c in report.checks:
        mark = "[green]ok[/green]" if c.ok else "[bold red]MISMATCH[/bold red]"
        console.print(f"  {mark}  {escape(c.name)}: predicted {c.predicted:,}, measured {c.measured:,}")
    console.print("agree: [green]yes[/green]" if report.agree else "agree: [bold red]NO[/bold red]")
