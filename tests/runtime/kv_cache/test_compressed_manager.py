"""DeepSeek-V4's layouts through the runtime: no new manager is needed.

A compressed cache lives exactly like full attention, with `ratio` tokens per stored state inside a
block (a 256-token block of 4:1 latents holds 64 states): FullAttentionManager at block 256. The
window caches (W 128, blocks of 64) and the compressor states (W 128 in blocks of 8, W 8 in blocks
of 4) are sliding windows: SlidingWindowManager at their own block sizes (test_mixed_block_sizes.py
covers mixed sizes). So the coordinator hashes every gcd(256, 64, 8, 4) = 4 tokens and hits land on
lcm = 256. A 4-layer cut of DeepSeek-V4-Flash (window only, 4:1, 128:1, 4:1) replays with integrity
checked every step, decode runs on and off equal, on a roomy pool (6 requests at once) and on a
tight one: the longest request (~1,060 tokens) is admitted against up to 2 x 11 + 5 + 131 + 81 =
239 blocks under vLLM's window bound W - 1 + T (T = 512; the small compressor blocks dominate), so
245 blocks run few at once (a 307-token prompt alone asks 5 + 5 + 2 + 77 + 39 = 128 blocks free),
hkv's exact bound (no more blocks than the sequence has) more than vllm's. Window and compressor
blocks are freed as they leave the window, the compressed latents never.
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime import KVCacheManager
from hkv.runtime.kv_cache.cache_config import EvictionPolicy
from hkv.runtime.scheduler.scheduler import SchedulerConfig
from hkv.runtime.simulation.workload_request import WorkloadRequest
from rt_replay import replay_both_ways

CONFIG = json.loads((Path(__file__).resolve().parents[2] / "data" / "configs" / "deepseek_v4.json").read_text())
SMALL = {**{k: v for k, v in CONFIG.items() if k not in ("layer_types", "mlp_layer_types")},
         "num_hidden_layers": 4, "compress_ratios": [0, 4, 128, 4]}


def _layout(name: str, num_blocks: int):
    """Groups: windows (4 x 37,440; split in two, as the repeats are 2: the least padding of
    [4, 2, 1] from the floor 2 set by the balanced 2 + 2 W 8 compressors), full (2 x 37,440 + 1,728 +
    2 x 8,640 = 93,888 B, the block), W 8 compressors (2 x 32,832 + 2 x 8,640), W 128 compressor."""
    model = from_hf_config(SMALL, "dsv4-cut")
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=num_blocks * 93_888, max_model_len=2048,
                     max_num_batched_tokens=256, primary_layout="vllm", enable_prefix_caching=True)
    return plan(model, cfg).reports[name].layout


def _request(i: int) -> WorkloadRequest:
    """Prompts of 300, 530 or 760 shared tokens (hits at 256 and 512) plus 7-206 own; 5-94 out."""
    prompt = array("q", range(1, 301 + (i % 3) * 230)) + array("q", range(1000 * (i + 1), 1000 * (i + 1) + 7 + (i * 37) % 200))
    return WorkloadRequest(f"r{i}", 0.01 * i, prompt, array("q", range(50_000 + 300 * i, 50_005 + 300 * i + (i * 11) % 90)))


def _workload(num_requests: int) -> list[WorkloadRequest]:
    return [_request(i) for i in range(num_requests)]


def test_the_layout_maps_onto_existing_managers() -> None:
    layout = _layout("vllm", 200)
    assert [(g.kind, g.block_size, g.num_layers) for g in layout.groups] == [
        (CacheKind.SLIDING, 64, 2), (CacheKind.SLIDING, 64, 2), (CacheKind.FULL, 256, 5), (CacheKind.SLIDING, 4, 4),
        (CacheKind.SLIDING, 8, 1)]
    assert layout.pools[0].bytes_per_block == 93_888
    coordinator = KVCacheManager(layout).coordinator
    assert coordinator.hash_block_size == 4
    assert coordinator.hit_alignment == 256


def _replay(name: str, num_blocks: int) -> dict:
    report = replay_both_ways(_layout(name, num_blocks), lambda: _workload(16),
                              SchedulerConfig(max_num_batched_tokens=256, max_num_seqs=6), EvictionPolicy.LRU)
    assert report["num_finished"] == 16
    assert report["num_hit_tokens"] > 0
    released = {g["kind"]: 0 for g in report["groups"]}
    for g in report["groups"]:
        released[g["kind"]] += g["early_released_blocks"]
    assert released["full"] == 0 and released["sliding"] > 0
    return report


def test_replays_intact_roomy_and_tight() -> None:
    assert _replay("vllm", 3000)["peak_running"] == 6  # max_num_seqs
    tight_vllm, tight_hkv = _replay("vllm", 245)["peak_running"], _replay("hkv", 245)["peak_running"]
    assert 1 <= tight_vllm < tight_hkv < 6
