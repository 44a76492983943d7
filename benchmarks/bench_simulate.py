"""Simulation speed (against a baseline commit, side by side) and eviction quality.

1. Speed: requests/s of `Simulator.run` per layout, this tree against the baseline commit
   (default eab1ba2: the commit before the issue-24 speed work) measured in the same run, each
   replay in a fresh subprocess, one at a time: (a) the public Mooncake conversation trace
   (12,031 requests, ~12k-token prompts sharing 512-token blocks, loaded by the benchmark, see
   simulate_speed/mooncake.py) on every layout of qwen3-next-80b-a3b (TP 4) and gemma-3-27b
   (TP 2) on an H100, max_num_seqs 256; (b) 100,000 requests of the synthetic shared-prefix
   workload on Gemma-3-27B's `hkv` layout (target: <= 30 s). Each row also says whether the
   two builds' outcomes (steps, hits, preemptions, evictions, tokens, peak running) agree.
2. Eviction, group-aware vs plain LRU (vLLM's policy), prefix-cache hit rates on Gemma-3-27B
   (sliding windows of 1,024 tokens): (a) multi-session round-robin traces with pools too
   small to keep every session (16 sessions in 12 GiB, 24 in 20 GiB); (b) 10,000 requests over
   16 shared system prompts on an H100 budget.

With --as-cli each replay is configured as `hkv simulate MODEL --gpu h100 --tp N` configures it
(the plan's budget, split pools sized for the workload, roofline step cost, automatic eviction):
the figures users see; it needs a baseline from 795f4b1 on.

Usage: python benchmarks/bench_simulate.py [--trace-limit N] [--requests 100000] [--baseline eab1ba2]
       [--candidate COMMIT] [--skip-speed] [--skip-eviction] [--layouts vllm,hkv] [--as-cli]
Run it from the editable install for the pure-Python figures (the default build).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from simulate_speed.baseline import BaselineTree
from simulate_speed.workloads import SHARED_PREFIX

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy
from hkv.runtime.scheduler.scheduler import SchedulerConfig
from hkv.runtime.simulation.simulator import SimulationConfig, Simulator
from hkv.runtime.simulation.workload_gen import generate_workload
from hkv.runtime.simulation.workload_spec import parse_workload

REPO = Path(__file__).resolve().parents[1]
REPLAY = Path(__file__).resolve().parent / "simulate_speed" / "replay.py"
SPEED_MODELS = (("qwen3-next-80b-a3b", 4), ("gemma-3-27b", 2))
MAX_NUM_SEQS = 256  # as simulate_speed/replay.py
# Printed before -> after when two builds' outcomes differ: hkv's own layouts may change
# representation (lanes) but not lose on these.
OUTCOME_SIDE_BY_SIDE = ("num_hit_tokens", "num_preemptions", "simulated_s", "num_steps", "num_evictions")


def run_replay(pythonpath: Path | None, model: str, tp: int, layout: str, workload: str,
               mode: str) -> dict[str, object]:
    """One replay in a fresh interpreter; `pythonpath` makes another tree's hkv the one imported.
    `mode`: replay.py's CACHE argument ("default", or "cli": as `hkv simulate` replays)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, str(REPLAY), model, str(tp), layout, workload, mode],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def speed_row(baseline: BaselineTree, candidate: BaselineTree | None, model: str, tp: int, layout: str,
              workload: str, label: str, mode: str) -> None:
    before = run_replay(baseline.pythonpath, model, tp, layout, workload, mode)
    after = run_replay(candidate.pythonpath if candidate is not None else None, model, tp, layout, workload, mode)
    if "error" in before or "error" in after:
        print(f"  {model:<20} {layout:<15} {label:<22} failed: {before.get('error') or after.get('error')}", flush=True)
        return
    ratio = after["requests_per_s"] / before["requests_per_s"]
    same = "same outcome" if before["outcome"] == after["outcome"] else "outcome differs"
    print(f"  {model:<20} {layout:<15} {label:<22} {before['requests_per_s']:8.0f} {after['requests_per_s']:8.0f} "
          f"{ratio:6.2f}x  {before['wall_s']:7.1f} s -> {after['wall_s']:6.1f} s  {same}", flush=True)
    if before["outcome"] != after["outcome"]:  # what a layout may not lose on, side by side
        for field in OUTCOME_SIDE_BY_SIDE:
            print(f"  {'':<20} {'':<15} {field:<22} {before['outcome'][field]!s:>17} -> {after['outcome'][field]!s}",
                  flush=True)


def speed(baseline_commit: str, candidate_commit: str | None, trace_limit: int, num_requests: int,
          layouts: list[str] | None, mode: str) -> None:
    baseline = BaselineTree(REPO, baseline_commit)
    candidate = BaselineTree(REPO, candidate_commit) if candidate_commit else None
    try:
        trace = f"mooncake:{trace_limit}"
        label = f"mooncake {trace_limit or 'all'}"
        print(f"speed, pure Python, requests/s of Simulator.run: {baseline_commit} | "
              f"{candidate_commit or 'this tree'} | ratio "
              f"(H100, {'as hkv simulate replays' if mode == 'cli' else f'max_num_seqs {MAX_NUM_SEQS}, fixed step model'}, "
              f"each replay in its own process, one at a time)")
        for model, tp in SPEED_MODELS:
            names = plan(load_model_spec(model), PlanConfig(gpu="h100", tp=tp, max_num_seqs=MAX_NUM_SEQS)).reports
            for layout in names:
                if layouts is None or layout in layouts:
                    speed_row(baseline, candidate, model, tp, layout, trace, label, mode)
        speed_row(baseline, candidate, "gemma-3-27b", 2, "hkv", SHARED_PREFIX.format(n=num_requests),
                  f"shared-prefix {num_requests:,}", mode)
    finally:
        baseline.close()
        if candidate is not None:
            candidate.close()


def compare_policies(title: str, spec: str, cfg: PlanConfig, max_num_seqs: int) -> None:
    """Run the workload through the `vllm` and `hkv` layouts of Gemma-3-27B under LRU and
    group-aware eviction; print each run and the hit-rate ratio per layout."""
    workload = generate_workload(parse_workload(spec))
    reports = plan(load_model_spec("gemma-3-27b"), cfg).reports
    print(f"eviction: {spec} on gemma-3-27b, {title}")
    for layout_name in ("vllm", "hkv"):
        layout = reports[layout_name].layout
        rates = {}
        for policy in (EvictionPolicy.LRU, EvictionPolicy.GROUP_AWARE):
            sim_cfg = SimulationConfig(SchedulerConfig(8192, max_num_seqs), CacheConfig(eviction_policy=policy))
            report = Simulator(layout, workload, sim_cfg).run()
            rates[policy] = report.prefix_hit_rate
            print(f"  {layout_name:>5} layout, {policy.value:>11}: hit rate {report.prefix_hit_rate:6.1%}, "
                  f"{report.num_evictions:,} evictions, {report.num_steps:,} steps, "
                  f"{report.num_preemptions:,} preemptions, {report.num_tokens_processed:,} tokens computed")
        lru, aware = rates[EvictionPolicy.LRU], rates[EvictionPolicy.GROUP_AWARE]
        print(f"  {layout_name:>5} layout: group-aware / LRU hit rate = {aware / lru if lru else float('inf'):.2f}x")


def eviction(kv_gib: float, sessions: int, turns: int) -> None:
    compare_policies(f"{kv_gib} GiB of KV memory",
                     f"sessions:sessions={sessions},turns={turns},prompt=512,output=128,seed=3",
                     PlanConfig(available_kv_memory_bytes=int(kv_gib * 2**30), max_model_len=32768), 64)


def eviction_shared_prefix(num_requests: int = 10_000) -> None:
    compare_policies("h100 budget, max_model_len 8192", SHARED_PREFIX.format(n=num_requests),
                     PlanConfig(gpu="h100", max_model_len=8192), 256)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_000, help="shared-prefix requests of the speed run")
    parser.add_argument("--trace-limit", type=int, default=0, help="first N Mooncake requests (0: all 12,031)")
    parser.add_argument("--baseline", default="eab1ba2", help="commit the speed is compared with")
    parser.add_argument("--candidate", default=None, help="commit measured against it (default: this working tree)")
    parser.add_argument("--layouts", default=None, help="comma-separated layout names (default: all)")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-eviction", action="store_true")
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--as-cli", action="store_true",
                        help="replay as `hkv simulate` does (plan budget, sized split, roofline, auto eviction; "
                             "needs a baseline from 795f4b1 on)")
    args = parser.parse_args()
    if not args.skip_eviction:
        for kv_gib, sessions in ((12.0, 16), (20.0, 24)):
            eviction(kv_gib, sessions, args.turns)
        eviction_shared_prefix()
    if not args.skip_speed:
        speed(args.baseline, args.candidate, args.trace_limit, args.requests,
              args.layouts.split(",") if args.layouts else None, "cli" if args.as_cli else "default")


if __name__ == "__main__":
    main()
