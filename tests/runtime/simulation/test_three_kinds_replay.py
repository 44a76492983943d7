"""Three cache kinds in one model (GDN + sliding window + full attention; the config and its
planned layouts: tests/planner/test_three_kinds.py) replayed through every layout it plans: the
coordinator fans out over recurrent, sliding and full groups (one shared pool in `vllm`, attention
+ state pools in `hkv`, three pools in `partitioned`), integrity checked after every step."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest
from rt_replay import replay_both_ways

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime.kv_cache.cache_config import EvictionPolicy
from hkv.runtime.scheduler.scheduler import SchedulerConfig
from hkv.runtime.simulation.workload_request import WorkloadRequest

CONFIG = json.loads((Path(__file__).resolve().parents[2] / "data" / "configs" / "three_kinds.json").read_text())
VLLM_BLOCK_BYTES = 3_342_336  # 3 layers x a 544-token page of 2,048 B per token (test_three_kinds.py)


def _workload() -> list[WorkloadRequest]:
    """40 staggered requests sharing one of three system prompts (300 to 1,100 tokens, across the
    512-token window), every fifth the next turn of the one before it."""
    requests: list[WorkloadRequest] = []
    for i in range(40):
        output = array("q", range(900_000 + 1000 * i, 900_000 + 1000 * i + 4 + (i * 11) % 40))
        if i % 5 == 4:
            parent = requests[-1]
            prompt = parent.prompt_token_ids + parent.output_token_ids + array("q", range(7, 7 + 30 + i))
            requests.append(WorkloadRequest(f"r{i}", 0.02 * i, prompt, output, depends_on=i - 1))
            continue
        shared = array("q", range(1, 1 + 300 + (i % 3) * 400))
        prompt = shared + array("q", range(10_000 * (i + 1), 10_000 * (i + 1) + 20 + (i * 13) % 90))
        requests.append(WorkloadRequest(f"r{i}", 0.02 * i, prompt, output))
    return requests


@pytest.mark.parametrize("layout_name", ["hkv", "vllm", "partitioned"])
@pytest.mark.parametrize("eviction", [EvictionPolicy.LRU, EvictionPolicy.GROUP_AWARE])
def test_every_layout_replays_with_integrity_checks(layout_name: str, eviction: EvictionPolicy) -> None:
    """A budget of 20 vLLM blocks (vLLM charges 4 + 5 + 2 x 2 = 13 per request of 2,048 tokens: its
    pool runs out and preempts); decode runs on and off give the same report."""
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=20 * VLLM_BLOCK_BYTES, max_model_len=2048,
                     max_num_batched_tokens=2048, expected_avg_seq_len=800)
    layout = plan(from_hf_config(CONFIG, "three-kinds"), cfg).reports[layout_name].layout
    assert {g.kind for g in layout.groups} == {CacheKind.RECURRENT, CacheKind.SLIDING, CacheKind.FULL}
    assert len(layout.pools) == {"hkv": 2, "vllm": 1, "partitioned": 3}[layout_name]
    report = replay_both_ways(layout, _workload, SchedulerConfig(max_num_batched_tokens=256, max_num_seqs=8), eviction)
    assert report["num_finished"] == 40
    assert report["num_hit_tokens"] > 0
    if layout_name == "vllm":
        assert report["num_preemptions"] > 0
