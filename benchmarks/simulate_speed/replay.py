"""One replay, timed: `python benchmarks/simulate_speed/replay.py MODEL TP LAYOUT WORKLOAD [CACHE]`.

WORKLOAD is `mooncake:N` (the first N requests of the Mooncake conversation trace, 0: all) or a
workload spec (`shared-prefix:n=...`). Prints one JSON object: requests/s over the simulation
alone (the workload is built before the clock starts) and the report's outcome fields, which two
builds must agree on. CACHE: default, lru or vllm (CACHE_CONFIGS), or cli: the whole configuration `hkv simulate` replays
with (`as_cli`). Whichever hkv is importable runs (see baseline.py).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulate_speed.outcome import outcome_of  # noqa: E402
from simulate_speed.workloads import build_workload  # noqa: E402

from hkv.model_specs.resolve import load_model_spec  # noqa: E402
from hkv.planner.plan import plan  # noqa: E402
from hkv.planner.plan_config import PlanConfig  # noqa: E402
from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy  # noqa: E402
from hkv.runtime.scheduler.scheduler import SchedulerConfig  # noqa: E402
from hkv.runtime.simulation.simulator import SimulationConfig, Simulator  # noqa: E402

MAX_NUM_SEQS = 256
# Cache configurations by name: hkv's defaults, plain LRU, vLLM's mode (CacheConfig.vllm()).
CACHE_CONFIGS = {
    "default": CacheConfig(),
    "lru": CacheConfig(eviction_policy=EvictionPolicy.LRU),
    "vllm": CacheConfig.vllm(),
}


def replay(model: str, tp: int, layout_name: str, workload_text: str, cache: str = "default") -> dict[str, object]:
    workload = build_workload(workload_text)
    if cache == "cli":
        simulator = Simulator(*as_cli(model, tp, layout_name, workload))
    else:
        layout = plan(load_model_spec(model), PlanConfig(gpu="h100", tp=tp, max_num_seqs=MAX_NUM_SEQS)).reports[
            layout_name].layout
        simulator = Simulator(layout, workload, SimulationConfig(SchedulerConfig(8192, MAX_NUM_SEQS),
                                                                          CACHE_CONFIGS[cache]))
    start = time.perf_counter()
    report = simulator.run()
    wall_s = time.perf_counter() - start
    return {"wall_s": wall_s, "requests_per_s": len(workload) / wall_s, "outcome": outcome_of(report)}


def as_cli(model: str, tp: int, layout_name: str, workload: list) -> tuple:
    """(layout, workload, config) as `hkv simulate MODEL --gpu h100 --tp TP` replays them: the plan's
    own budget and max_num_seqs, split pools sized for the workload, the roofline step cost and
    the automatic eviction policy (trees from 795f4b1 on)."""
    from hkv.planner.capacity.workload_lengths import sized_for_workload
    from hkv.runtime.kv_cache.default_eviction import default_eviction_policy
    from hkv.runtime.simulation.metrics.plan_step_cost import step_cost_for_plan

    spec = load_model_spec(model)
    cfg = PlanConfig(gpu="h100", tp=tp)
    the_plan = plan(spec, cfg)
    max_model_len = the_plan.primary.layout.max_model_len
    if any(len(r.layout.pools) > 1 for r in the_plan.reports.values()):
        the_plan = plan(spec, sized_for_workload(cfg, ((r.prompt_len, r.output_len) for r in workload), max_model_len))
    config = SimulationConfig(
        SchedulerConfig(the_plan.budget.max_num_batched_tokens, the_plan.budget.max_num_seqs),
        CacheConfig(eviction_policy=default_eviction_policy(the_plan.primary.layout)),
        step_cost=step_cost_for_plan(the_plan)[0])
    return the_plan.reports[layout_name].layout, workload, config


if __name__ == "__main__":
    model_arg, tp_arg, layout_arg, workload_arg = sys.argv[1:5]
    cache_arg = sys.argv[5] if len(sys.argv) > 5 else "default"
    print(json.dumps(replay(model_arg, int(tp_arg), layout_arg, workload_arg, cache_arg)))
