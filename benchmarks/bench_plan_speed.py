"""Wall time of `hkv plan MODEL --gpu GPU --format json` (default flags: the plan picks its TP) for
every catalog model x every GPU in the table, and every published config of tests/fixtures/real_configs
on 8 H100s (`--tp 8`, as tests/model_specs/test_real_configs.py plans them), in one process.

Usage: python benchmarks/bench_plan_speed.py [--models a,b] [--gpus h100,l4] [--no-real-configs]
                                             [--slowest 5] [--reference 8]
Prints the worst plan (the `--slowest` cases timed as the median of 3), the median and the total,
and the share of plans within the 0.5 s target. Then, side by side on the `--reference` slowest
cases, the sustained search as it was before issue 34 (every probe walked from scratch with
runs_clean_each, the walk of every request at every step): the same plans, timed in the same run,
their ratio, and whether every JSON output is equal.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from hkv.cli.main import app
from hkv.model_specs.catalog import catalog_names
from hkv.planner.capacity import sustained
from hkv.planner.budget.gpu_table import GPUS

Case = tuple[str, ...]  # the CLI arguments after `plan`
TARGET_S = 0.5
REAL_CONFIGS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real_configs"


def before_issue_34(layout, setup, cap) -> Callable[[int], bool]:  # noqa: ANN001 (sustained.clean_probe's)
    """sustained.clean_probe as it was: each probe walks every request at every step from scratch."""
    return lambda n: sustained.runs_clean_each(layout, n, setup)


def plan_once(runner: CliRunner, case: Case) -> tuple[float, str]:
    start = time.perf_counter()
    result = runner.invoke(app, ["plan", *case, "--format", "json"])
    return time.perf_counter() - start, f"rc={result.exit_code}\n{result.stdout}"


def time_all(cases: list[Case], slowest: int) -> tuple[dict[Case, float], dict[Case, str]]:
    """Seconds per case (the median of 3 for the `slowest` cases) and each case's output."""
    runner = CliRunner()
    times, outputs = {}, {}
    for i, case in enumerate(cases, 1):
        times[case], outputs[case] = plan_once(runner, case)
        if i % 100 == 0:
            print(f"  {i} of {len(cases)} planned", flush=True)
    for case in sorted(cases, key=times.__getitem__)[-slowest:]:
        times[case] = statistics.median([times[case]] + [plan_once(runner, case)[0] for _ in range(2)])
    return times, outputs


def name(case: Case) -> str:
    return " ".join(Path(a).stem if a.endswith(".json") else a for a in case)


def summary(label: str, times: dict[Case, float]) -> None:
    worst = max(times, key=times.__getitem__)
    within = sum(t <= TARGET_S for t in times.values())
    print(f"{label:<12} worst {times[worst]:6.2f} s ({name(worst)})   median {statistics.median(times.values()) * 1000:6.1f} ms"
          f"   total {sum(times.values()):7.1f} s   within {TARGET_S} s: {within} of {len(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", help="comma-separated catalog names (default: all)")
    parser.add_argument("--gpus", help="comma-separated GPU names (default: the whole table)")
    parser.add_argument("--no-real-configs", action="store_true", help="leave out tests/fixtures/real_configs")
    parser.add_argument("--slowest", type=int, default=5, help="cases timed as the median of 3")
    parser.add_argument("--reference", type=int, default=8, help="slowest cases re-timed with the old search")
    args = parser.parse_args()
    models = args.models.split(",") if args.models else list(catalog_names())
    gpus = args.gpus.split(",") if args.gpus else [g.name for g in GPUS]
    cases: list[Case] = [(m, "--gpu", g) for m in models for g in gpus]
    if not args.no_real_configs:
        cases += [(str(p), "--gpu", "h100", "--tp", "8") for p in sorted(REAL_CONFIGS.glob("*.json"))
                  if not p.name.endswith(".hf_quant_config.json")]
    print(f"{len(cases)} plans: {len(models)} catalog models x {len(gpus)} GPUs"
          + ("" if args.no_real_configs else f" + {len(cases) - len(models) * len(gpus)} published configs on 8 H100s"))
    current, current_out = time_all(cases, args.slowest)
    summary("now", current)
    for case in sorted(current, key=current.__getitem__)[-5:][::-1]:
        print(f"  {current[case]:6.2f} s  {name(case)}")
    if not args.reference:
        return
    slow = sorted(current, key=current.__getitem__)[-args.reference:]
    now, _ = time_all(slow, len(slow))  # both sides as medians of 3, back to back
    saved, sustained.clean_probe = sustained.clean_probe, before_issue_34
    try:
        reference, reference_out = time_all(slow, len(slow))
    finally:
        sustained.clean_probe = saved
    print(f"the {len(slow)} slowest, side by side (median of 3 each):")
    for case in slow[::-1]:
        print(f"  {name(case):<60} now {now[case]:6.2f} s   before {reference[case]:6.2f} s   "
              f"{reference[case] / now[case]:5.1f}x")
    differ = [name(case) for case in slow if current_out[case] != reference_out[case]]
    print(f"outputs equal: {not differ}" + (f" (differ: {differ})" if differ else ""))


if __name__ == "__main__":
    main()
