"""Progress of a long simulation on stderr: a rich bar when stderr is a terminal, otherwise (a
pipe, a log file, CI) one plain line every few seconds. Both say the layout, the requests
finished (of how many, when known) and the simulated time reached."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from hkv.cli.output import stderr_console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

ProgressFn = Callable[[int, "int | None"], None]  # the Simulator's callback: (finished, total if known)


@dataclass(frozen=True)
class ProgressConfig:
    interval_s: float = 5.0  # between plain lines
    clock: Callable[[], float] = time.monotonic


class PlainProgress:
    """The Simulator's progress callback writing `hkv: simulating LAYOUT: N / M requests
    finished, S s simulated, W s elapsed` at most once per interval (the first after one)."""

    def __init__(self, layout_name: str, simulated_s: Callable[[], float], config: ProgressConfig,
                 write: Callable[[str], None]) -> None:
        self._layout_name = layout_name
        self._simulated_s = simulated_s
        self._config = config
        self._write = write
        self._start = self._last = config.clock()

    def __call__(self, finished: int, total: int | None) -> None:
        now = self._config.clock()
        if now - self._last < self._config.interval_s:
            return
        self._last = now
        of = "" if total is None else f" / {total:,}"
        self._write(f"hkv: simulating {self._layout_name}: {finished:,}{of} requests finished, "
                    f"{self._simulated_s():,.1f} s simulated, {now - self._start:,.0f} s elapsed")


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def simulation_progress(layout_name: str, simulated_s: Callable[[], float], total: int | None,
                        config: ProgressConfig | None = None) -> Iterator[ProgressFn]:
    """The callback to pass to Simulator.run while the context is open."""
    config = config or ProgressConfig()
    if not sys.stderr.isatty():
        yield PlainProgress(layout_name, simulated_s, config, _stderr_line)
        return
    columns = (TextColumn(layout_name), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[sim]}"),
               TimeElapsedColumn())
    with Progress(*columns, console=stderr_console(), transient=True) as bar:
        task = bar.add_task("simulate", total=total, sim="")

        def update(finished: int, _total: int | None) -> None:
            bar.update(task, completed=finished, sim=f"{simulated_s():,.0f} s simulated")
        yield update
