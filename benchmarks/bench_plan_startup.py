"""Cold-start wall time of `hkv plan` next to `python -c pass`, measured side by side.

Usage: python benchmarks/bench_plan_startup.py [--runs N] [--model gemma-3-27b] [--bytecode MODE]

Prints the median of N runs of each and their ratio (issue 34's target: at most 8x), then which
heavy packages the plan imported (tests/cli/test_plan_imports.py fails the build on any).

--bytecode says how Python finds hkv's compiled modules, the one thing besides the code that
moves the figure by half:
  inherit  the environment as it is (a checkout run with PYTHONDONTWRITEBYTECODE and no
           __pycache__ compiles every hkv module on every start);
  cached   both commands read compiled modules from a private PYTHONPYCACHEPREFIX filled by a
           warm-up run: what an installed hkv does (pip compiles at install);
  both     (default) one line of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

# What `hkv plan` on a catalog model has no use for: tests/cli/test_plan_imports.py's HEAVY.
HEAVY = ("torch", "transformers", "huggingface_hub", "safetensors", "numpy", "triton", "tokenizers",
         "pydantic", "rich", "hkv.runtime", "hkv.kernels", "hkv.model_specs.hub")

_PROBE = """
import runpy, sys
sys.argv = ["hkv", *sys.argv[1:]]
try:
    runpy.run_module("hkv.cli", run_name="__main__")
except SystemExit:
    pass
heavy = [h for h in {heavy!r} if any(m == h or m.startswith(h + ".") for m in sys.modules)]
print("heavy imported by the plan:", ", ".join(heavy) or "none", file=sys.stderr)
"""


def median_wall_s(cmd: list[str], runs: int, env: dict[str, str]) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(label: str, plan_cmd: list[str], runs: int, env: dict[str, str]) -> None:
    python = sys.executable
    # One untimed run first: the file cache (and, with a cache prefix, the compiled modules) warm.
    subprocess.run(plan_cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    base = median_wall_s([python, "-c", "pass"], runs, env)
    plan = median_wall_s(plan_cmd, runs, env)
    print(f"[{label}]")
    print(f"  python -c pass : {base * 1000:8.1f} ms (median of {runs})")
    print(f"  hkv plan       : {plan * 1000:8.1f} ms (median of {runs})")
    print(f"  ratio          : {plan / base:8.1f}x")


def cached_env(prefix: str) -> dict[str, str]:
    """Compiled modules written to and read from `prefix` (warm after the first run)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = prefix
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)  # the stdlib's share
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--model", default="gemma-3-27b")
    parser.add_argument("--bytecode", choices=("inherit", "cached", "both"), default="both")
    args = parser.parse_args()
    plan_args = ["plan", args.model, "--gpu", "h100", "--format", "json"]
    plan_cmd = [sys.executable, "-m", "hkv.cli", *plan_args]
    print(f"hkv plan {args.model} --gpu h100 --format json")
    if args.bytecode in ("inherit", "both"):
        measure("bytecode: as the environment has it", plan_cmd, args.runs, dict(os.environ))
    if args.bytecode in ("cached", "both"):
        with tempfile.TemporaryDirectory(prefix="hkv-pycache-") as prefix:
            measure("bytecode: cached, as installed", plan_cmd, args.runs, cached_env(prefix))
    probe = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY), *plan_args],
                           capture_output=True, text=True, check=True)
    print(probe.stderr.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
