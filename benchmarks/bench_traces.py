"""Public traces through `hkv simulate`: every layout, both eviction policies, next to the bound.

    .venv/bin/python benchmarks/bench_traces.py [--limit N] [--cases qwen3-next:mooncake,...]
                                                [--policies lru,group_aware] [--format json]

Runs the CLI users run (`hkv simulate MODEL --gpu h100 --tp TP --trace FILE --layout all
--eviction POLICY --format json`, defaults otherwise) on the Mooncake conversation trace and the
two Azure 2023 traces (../shared/data/traces) for Qwen3-Next-80B-A3B (TP 4) and Gemma-3-27B
(TP 2), and prints per layout: requests finished, simulated seconds to finish the trace and
finished requests per simulated second, preemptions, the first-admission prefix hit rate next to
the trace's infinite-cache bound (runtime/simulation/prefix_bound.py, 16-token blocks), and the
wall time and requests/s of the replay. Whole traces take minutes per case; --limit replays the
first N requests.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from hkv.runtime.simulation.prefix_bound import prefix_bound
from hkv.runtime.simulation.traces.trace_options import TraceOptions
from hkv.runtime.simulation.traces.trace_source import TraceSource
from hkv.runtime.simulation.traces.trace_window import TraceWindow

TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
TRACE_FILES = {"mooncake": "mooncake_conversation_trace.jsonl", "azure-conv": "azure2023_conv.csv",
               "azure-code": "azure2023_code.csv"}
MODELS = {"qwen3-next": ("qwen3-next-80b-a3b", 4), "gemma-3-27b": ("gemma-3-27b", 2)}
HKV = str(Path(sys.executable).with_name("hkv"))
BOUND_BLOCK_SIZE = 16


def run_case(model: str, tp: int, trace: Path, policy: str, limit: int | None) -> tuple[dict, float]:
    cmd = [HKV, "simulate", model, "--gpu", "h100", "--tp", str(tp), "--trace", str(trace), "--layout", "all",
           "--eviction", policy, "--format", "json"]
    if limit:
        cmd += ["--trace-limit", str(limit)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall_s = time.perf_counter() - start
    if not done.stdout.strip():
        raise SystemExit(f"{' '.join(cmd)} printed no JSON (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout), wall_s


def bound(trace: Path, limit: int | None) -> float:
    options = TraceOptions(window=TraceWindow(limit=limit)) if limit else TraceOptions()
    return prefix_bound(TraceSource(trace, options), BOUND_BLOCK_SIZE).hit_rate


def rows_of(doc: dict, case: str, policy: str, bound_rate: float) -> list[dict]:
    rows = []
    for r in doc["reports"]:
        timing = r["timing"]
        rows.append({"case": case, "policy": policy, "layout": r["layout"], "finished": r["num_finished"],
                     "requests": r["num_requests"], "simulated_s": r["simulated_s"],
                     "finished_per_s": timing.get("finished_per_s"), "preemptions": r["num_preemptions"],
                     "first_admission_hit_rate": r["hits"]["first_admission_hit_rate"], "bound": bound_rate,
                     "peak_running": r["peak_running"], "wall_s": r["wall_s"],
                     "requests_per_wall_s": r["num_requests"] / r["wall_s"] if r["wall_s"] else None})
    for f in doc.get("failed", []):
        rows.append({"case": case, "policy": policy, "layout": f.get("layout"), "failed": f.get("reason")})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="replay the first N requests of each trace")
    parser.add_argument("--cases", default=",".join(f"{m}:{t}" for m in MODELS for t in TRACE_FILES),
                        help="model:trace pairs, comma-separated")
    parser.add_argument("--policies", default="lru,group_aware")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    bounds: dict[str, float] = {}
    for case in args.cases.split(","):
        model_key, trace_key = case.split(":")
        model, tp = MODELS[model_key]
        trace = TRACES / TRACE_FILES[trace_key]
        if trace_key not in bounds:
            bounds[trace_key] = bound(trace, args.limit)
        for policy in args.policies.split(","):
            doc, wall_s = run_case(model, tp, trace, policy, args.limit)
            rows.extend(rows_of(doc, case, policy, bounds[trace_key]))
            print(f"# {case} {policy}: {wall_s:.0f} s wall for every layout", file=sys.stderr, flush=True)
    if args.format == "json":
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    head = ("case", "policy", "layout", "finished", "sim s", "fin/s", "preempt", "hit 1st", "bound", "peak run",
            "wall s", "req/s")
    print(" | ".join(head))
    for r in rows:
        if "failed" in r:
            print(f"{r['case']} | {r['policy']} | {r['layout']} | failed: {r['failed']}")
            continue
        print(" | ".join((r["case"], r["policy"], r["layout"], f"{r['finished']:,}/{r['requests']:,}",
                          f"{r['simulated_s']:,.0f}", f"{r['finished_per_s'] or 0:.2f}", f"{r['preemptions']:,}",
                          f"{r['first_admission_hit_rate']:.1%}", f"{r['bound']:.1%}", str(r["peak_running"]),
                          f"{r['wall_s']:.1f}", f"{r['requests_per_wall_s'] or 0:,.0f}")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
