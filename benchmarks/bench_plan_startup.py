"""Cold-start wall time of `hkv plan` next to `python -c pass`, measured side by side.

Usage: python benchmarks/bench_plan_startup.py [--runs N] [--model gemma-3-27b]
Prints the median of N runs of each and their ratio; also checks torch is never imported.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def median_wall_s(cmd: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--model", default="gemma-3-27b")
    args = parser.parse_args()
    python = sys.executable
    plan_cmd = [python, "-m", "hkv.cli", "plan", args.model, "--gpu", "h100", "--format", "json"]
    subprocess.run(plan_cmd, check=True, stdout=subprocess.DEVNULL)  # warm the file cache once
    base = median_wall_s([python, "-c", "pass"], args.runs)
    plan = median_wall_s(plan_cmd, args.runs)
    probe = subprocess.run([python, "-c", "import sys, hkv.cli.main; print('torch' in sys.modules)"],
                           check=True, capture_output=True, text=True).stdout.strip()
    print(f"python -c pass        : {base * 1000:8.1f} ms (median of {args.runs})")
    print(f"hkv plan {args.model} : {plan * 1000:8.1f} ms (median of {args.runs})")
    print(f"ratio                 : {plan / base:8.1f}x")
    print(f"torch imported by the CLI: {probe}")


if __name__ == "__main__":
    main()
