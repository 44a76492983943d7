"""Wall time of `hkv plan MODEL --gpu GPU --format json` (default flags: the plan picks its TP) for
every catalog model x every GPU in the table, with the sustained walk of planner/sustained.py
(steady decoders grouped) next to the previous walk of every request at every step
(runs_clean_each), timed side by side in one process on the same inputs.

Usage: python benchmarks/bench_plan_speed.py [--models a,b] [--gpus h100,l4] [--slowest 5] [--no-reference]
Prints per implementation the worst plan (median of 3 for the slowest few), the median and the
total, the ratio of the previous walk to the current one, and whether every JSON output is equal.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from typer.testing import CliRunner

from hkv.cli.main import app
from hkv.model_specs.catalog import catalog_names
from hkv.planner import sustained
from hkv.planner.budget.gpu_table import GPUS

Case = tuple[str, str]


def plan_once(runner: CliRunner, case: Case) -> tuple[float, str]:
    model, gpu = case
    start = time.perf_counter()
    result = runner.invoke(app, ["plan", model, "--gpu", gpu, "--format", "json"])
    return time.perf_counter() - start, f"rc={result.exit_code}\n{result.stdout}"


def time_all(cases: list[Case], walk: Callable[..., bool], slowest: int) -> tuple[dict[Case, float], dict[Case, str]]:
    """Seconds per case (the median of 3 for the `slowest` cases) and each case's output, with
    `walk` as sustained.runs_clean."""
    saved, sustained.runs_clean = sustained.runs_clean, walk
    runner = CliRunner()
    try:
        times, outputs = {}, {}
        for case in cases:
            times[case], outputs[case] = plan_once(runner, case)
        for case in sorted(cases, key=times.__getitem__)[-slowest:]:
            times[case] = statistics.median([times[case]] + [plan_once(runner, case)[0] for _ in range(2)])
    finally:
        sustained.runs_clean = saved
    return times, outputs


def summary(label: str, times: dict[Case, float]) -> None:
    worst = max(times, key=times.__getitem__)
    print(f"{label:<10} worst {times[worst]:7.2f} s ({worst[0]} on {worst[1]})   "
          f"median {statistics.median(times.values()) * 1000:7.1f} ms   total {sum(times.values()):7.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", help="comma-separated catalog names (default: all)")
    parser.add_argument("--gpus", help="comma-separated GPU names (default: the whole table)")
    parser.add_argument("--slowest", type=int, default=5, help="cases timed as the median of 3")
    parser.add_argument("--no-reference", action="store_true", help="skip the previous walk")
    args = parser.parse_args()
    models = args.models.split(",") if args.models else list(catalog_names())
    gpus = args.gpus.split(",") if args.gpus else [g.name for g in GPUS]
    cases = [(m, g) for m in models for g in gpus]
    print(f"{len(cases)} plans ({len(models)} models x {len(gpus)} GPUs)")
    current, current_out = time_all(cases, sustained.runs_clean, args.slowest)
    summary("grouped", current)
    if args.no_reference:
        return
    reference, reference_out = time_all(cases, sustained.runs_clean_each, args.slowest)
    summary("reference", reference)
    print(f"ratio      worst {max(reference.values()) / max(current.values()):6.1f}x   "
          f"total {sum(reference.values()) / sum(current.values()):6.1f}x")
    differ = [case for case in cases if current_out[case] != reference_out[case]]
    print(f"outputs equal: {not differ}" + (f" (differ: {differ})" if differ else ""))


if __name__ == "__main__":
    main()
