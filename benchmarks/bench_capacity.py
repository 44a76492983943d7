"""Logged, sustained and physical-limit concurrency per layout for four hybrid models on h100.

    .venv/bin/python benchmarks/bench_capacity.py            # predicted sustained (planner)
    .venv/bin/python benchmarks/bench_capacity.py --measure  # also measured (real scheduler)

Gemma-3-27B fits one H100; gpt-oss-120b, Llama-4-Scout and Qwen3-Next get --tp so their weights
fit. Requests of max_model_len tokens split into max_model_len // 8 output tokens and the rest
prompt (the default of `--output-len`). sustained / limit is how much of the pools' physical
capacity the layout turns into concurrently running requests.
"""

from __future__ import annotations

import sys

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan, sustained_setup
from hkv.planner.plan_config import PlanConfig

MODELS = (("gemma-3-27b-it", 1), ("gpt-oss-120b", 2), ("llama-4-scout-17b-16e-instruct", 4),
          ("qwen3-next-80b-a3b", 4))
LENGTHS = (8192, 32768)


def main(measure: bool) -> None:
    header = f"{'model':<32} {'tp':>2} {'len':>6} {'layout':<15} {'logged':>8} {'sustained':>9} {'limit':>8} {'sust/limit':>10}"
    print(header + (f" {'measured':>8}" if measure else ""))
    for name, tp in MODELS:
        for max_len in LENGTHS:
            cfg = PlanConfig(gpu="h100", tp=tp, max_model_len=max_len)
            result = plan(load_model_spec(name), cfg)
            for layout_name, report in result.reports.items():
                cap = report.capacity
                ratio = cap.sustained_concurrency / cap.physical_limit_concurrency if cap.physical_limit_concurrency else 0.0
                line = (f"{name:<32} {tp:>2} {max_len:>6} {layout_name:<15} {cap.logged_concurrency:>7.2f}x "
                        f"{cap.sustained_concurrency:>9} {cap.physical_limit_concurrency:>7.2f}x {ratio:>10.1%}")
                if measure:
                    from hkv.runtime.simulation.sustained_probe import measure_sustained

                    measured = measure_sustained(report.layout, sustained_setup(cfg, result.budget)).sustained
                    line += f" {measured:>8}" + ("" if measured == cap.sustained_concurrency else "  MISMATCH")
                print(line, flush=True)


if __name__ == "__main__":
    main("--measure" in sys.argv[1:])
