"""Simulation speed and eviction quality, measured side by side in one run.

1. Speed: N requests (default 100,000) through the Gemma-3-27B `hkv` layout on an H100 budget.
2. Eviction, group-aware vs plain LRU (vLLM's policy), prefix-cache hit rates on Gemma-3-27B
   (sliding windows of 1,024 tokens): (a) multi-session round-robin traces with pools too
   small to keep every session (16 sessions in 12 GiB, 24 in 20 GiB); (b) 10,000 requests over
   16 shared system prompts on an H100 budget.

Usage: python benchmarks/bench_simulate.py [--requests 100000] [--skip-speed]
The speed line names the build: run it from a HKV_COMPILE=1 install (see setup.py) for the
compiled figure, from the editable install for pure Python.
"""

from __future__ import annotations

import argparse
import time

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy
from hkv.runtime.scheduler.scheduler import SchedulerConfig
from hkv.runtime.simulation.simulator import SimulationConfig, Simulator
from hkv.runtime.simulation.workload_gen import generate_workload
from hkv.runtime.simulation.workload_spec import parse_workload


def speed(num_requests: int) -> None:
    model = load_model_spec("gemma-3-27b")
    layout = plan(model, PlanConfig(gpu="h100", max_model_len=8192)).reports["hkv"].layout
    spec = f"shared-prefix:n={num_requests},prefix=1024,prompt=64-512,output=16-128,prefixes=16,seed=1"
    start = time.perf_counter()
    workload = generate_workload(parse_workload(spec))
    gen_s = time.perf_counter() - start
    report = Simulator(layout, workload, SimulationConfig(SchedulerConfig(8192, 256))).run()
    print(f"speed: {num_requests:,} requests ({spec}) through gemma-3-27b/hkv on h100, "
          f"{report.runtime_build} build: "
          f"generate {gen_s:.1f} s + simulate {report.wall_s:.1f} s wall; {report.num_steps:,} steps, "
          f"{report.num_tokens_processed:,} tokens, hit rate {report.prefix_hit_rate:.1%}, "
          f"{report.num_finished:,} finished")


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
    compare_policies("h100 budget, max_model_len 8192",
                     f"shared-prefix:n={num_requests},prefix=1024,prompt=64-512,output=16-128,prefixes=16,seed=1",
                     PlanConfig(gpu="h100", max_model_len=8192), 256)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--turns", type=int, default=6)
    args = parser.parse_args()
    for kv_gib, sessions in ((12.0, 16), (20.0, 24)):
        eviction(kv_gib, sessions, args.turns)
    eviction_shared_prefix()
    if not args.skip_speed:
        speed(args.requests)


if __name__ == "__main__":
    main()
