"""Three cache kinds in one model (gated delta-net + sliding window + full attention, as vLLM
0.33's MuseSpark): every layout plans it (the runtime replays each:
tests/runtime/simulation/test_three_kinds_replay.py).

MuseSpark's own config is not in transformers 5.24, so the model is Qwen3-Next's default config
(transformers 5.24) cut to 12 layers with an explicit `layer_types` of GDN, sliding (512-token
window) and full attention in a 2:1:1 pattern: [linear, sliding, linear, full] x 3. Its geometry:
attention 2 KV heads x (256 + 256) x 2 B = 2,048 B per token; a GDN state is conv (3, 8,192)
bf16 = 49,152 B plus ssm (32, 128, 128) bf16 = 1,048,576 B: 1,097,728 B.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

GIB = 2**30
RECURRENT, SLIDING, FULL = CacheKind.RECURRENT, CacheKind.SLIDING, CacheKind.FULL

# tests/data/configs/three_kinds.json: Qwen3-Next's default config with the cut and the list above
THREE_KINDS = json.loads((Path(__file__).resolve().parents[1] / "data" / "configs" / "three_kinds.json").read_text())
assert THREE_KINDS["layer_types"] == ["linear_attention", "sliding_attention", "linear_attention",
                                      "full_attention"] * 3 and THREE_KINDS["sliding_window"] == 512


def _plan(available_bytes: int = 8 * GIB, max_model_len: int = 8192, **kw):
    model = from_hf_config(THREE_KINDS, "three-kinds")
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=available_bytes, max_model_len=max_model_len,
                     max_num_batched_tokens=2048, **kw)
    return plan(model, cfg)


def test_vllm_layout_by_hand() -> None:
    """The attention block grows until a page holds a GDN state: 16 x cdiv(1,097,728, 16 x 2,048)
    = 544 tokens, page 544 x 2,048 = 1,114,112 B (the state padded by 1.49 %). Buckets of 6 GDN,
    3 sliding, 3 full layers: group size 3 (6 >= 1.5 x 3), so GDN [0, 4, 8] and [2, 6, 10] (strided),
    sliding [1, 5, 9], full [3, 7, 11]; a block is 3 x 1,114,112 = 3,342,336 B, 8 GiB hold 2,570.
    Per request of 8,192 tokens with T = 2 x 2,048: full cdiv(8,192, 544) = 16, sliding
    cdiv(511 + 4,096, 544) + 1 = 10, GDN 2 x 2 (align mode: 2 states, no checkpoint): 30, so
    2,570 / 30 = 85.67x."""
    layout = _plan().reports["vllm"].layout
    assert [(g.kind, g.layer_ids, g.block_size) for g in layout.groups] == [
        (RECURRENT, (0, 4, 8), 544), (RECURRENT, (2, 6, 10), 544), (SLIDING, (1, 5, 9), 544), (FULL, (3, 7, 11), 544)]
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (3_342_336, 2_570)
    assert layout.blocks_per_request(8192) == (2, 2, 10, 16)
    assert layout.max_concurrency(8192) == pytest.approx(2570 / 30)


def test_partitioned_layout_has_three_pools() -> None:
    """One pool per kind, each group at its own page: full and sliding 3 x 16 x 2,048 = 98,304 B
    blocks, the states 6 x 1,097,728 = 6,586,368 B blocks (one live state per request); split so
    that requests of 8,192 tokens exhaust them together: per request 512 global blocks,
    cdiv(511 + 4,096, 16) + 1 = 289 local blocks (vLLM's T = 2 x 2,048), one state block."""
    layout = _plan().reports["partitioned"].layout
    assert [p.kind for p in layout.pools] == ["global", "local", "recurrent"]
    assert [(g.kind, g.pool_id) for g in layout.groups] == [(FULL, 0), (SLIDING, 1), (RECURRENT, 2)]
    assert [p.bytes_per_block for p in layout.pools] == [98_304, 98_304, 6_586_368]
    assert [layout.pool_blocks_per_request(p, 8192) for p in (0, 1, 2)] == [512, 289, 1]
    # Balanced: each pool admits the same number of max-length requests, within one request.
    admits = [(p.num_blocks - 1) // layout.pool_blocks_per_request(p.pool_id, 8192) for p in layout.pools]
    assert max(admits) - min(admits) <= 1, admits
    assert sum(p.num_bytes for p in layout.pools) <= 8 * GIB
    layout.check_integrity()


def test_hkv_layout_keeps_attention_and_states_apart() -> None:
    layout = _plan().reports["hkv"].layout
    assert [p.kind for p in layout.pools] == ["attention", "recurrent"]
    assert {g.kind for g in layout.groups if g.pool_id == 0} == {SLIDING, FULL}
    assert [g.kind for g in layout.groups if g.pool_id == 1] == [RECURRENT]


def test_every_layout_plans() -> None:
    result = _plan()
    assert set(result.reports) == {"hkv", "vllm", "partitioned"}
    assert "recurrent layers" in result.skipped["vllm-no-hybrid"]
    for report in result.reports.values():
        assert {g.kind for g in report.layout.groups} == {RECURRENT, SLIDING, FULL}
        assert report.capacity.sustained_concurrency > 0
