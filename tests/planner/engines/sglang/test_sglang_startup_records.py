"""SGLang's real start-ups (tests/fixtures/sglang_startups/records.json, from
shared/data/sglang_memory_logs/records.jsonl): hkv's pools within 2 % of the logged ones, given what
each log says (server args, release, and the budget: its free-memory lines, else as the record says)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.plan import plan_sglang
from hkv.planner.engines.sglang.pool_resolution import resolve_pools
from hkv.planner.engines.sglang.pools import SglangPools
from hkv.planner.engines.sglang.server_args import SglangServerArgs

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "fixtures" / "sglang_startups"
RECORDS = json.loads((FIXTURES / "records.json").read_text())
BY_ID = {r["record_id"]: r for r in RECORDS}
USABLE = [r for r in RECORDS if r["usable"]]
SOURCE_COUNT = 6  # shared/data/sglang_memory_logs/records.jsonl
TOLERANCE = 0.02
GIB = 2**30
VLM_CACHE_BYTES = 100 * 2**20  # SGLANG_VLM_CACHE_SIZE_MB, out of Gemma 4's rest (multimodal, >= 0.5.18)
# Gemma-4-26B-A4B with an FP8 cache (author's note in g001, and the config: 5 full layers of 2 KV heads
# x 512 with K and V stored; 25 sliding layers of 8 x 256), per token:
GEMMA_FULL_CELL = 5 * 2 * 512 * 2 * 1  # 10,240 B
GEMMA_SWA_CELL = 25 * 8 * 256 * 2 * 1  # 102,400 B
GEMMA_SWA_RATIO = 0.8


def _args(rec: dict) -> SglangServerArgs:
    return SglangServerArgs(**rec["server_args"], version=rec["release"])


def _spec(rec: dict):
    return load_model_spec(str(REPO / rec["model"]))


def _gemma_weights_bytes() -> int:
    """The weights as g001's pool and hkv's free-before-load estimate imply them: the rest that gives
    g001's full pool (the middle of its one-token interval), plus the VLM reservation and the
    (1 - mfs) slack, is free memory after the weights."""
    rec = BY_ID["g001"]
    plan = plan_sglang(_spec(rec), _args(rec), gpu=rec["gpu"])  # hkv's auto mem_fraction_static
    full = rec["logged"]["max_total_num_tokens"]
    rest = (full + 0.5) * (GEMMA_FULL_CELL + GEMMA_SWA_RATIO * GEMMA_SWA_CELL) + VLM_CACHE_BYTES
    free_before = plan.budget.free_before_load_bytes
    free_after = rest + (1 - plan.budget.mem_fraction_static) * free_before
    return int(free_before - free_after)


def _hkv_pools(rec: dict) -> SglangPools:
    spec, args, budget = _spec(rec), _args(rec), rec["budget"]
    if budget["kind"] == "log":
        free_before = int(budget["free_before_load_gib"] * GIB)
        weights = free_before - int(budget["free_after_weights_gib"] * GIB)
        return plan_sglang(spec, args, gpu=rec["gpu"], free_before_load_bytes=free_before,
                           weights_bytes=weights).pools
    if budget["kind"] in ("calibration", "free_after_weights_from"):
        return plan_sglang(spec, args, gpu=rec["gpu"], weights_bytes=_gemma_weights_bytes()).pools
    assert budget["kind"] == "pool_sizes", rec["record_id"]
    rest = int(sum(budget["gib"]) * GIB)
    return resolve_pools(spec, args, rest, args.mem_fraction_static or 0.0,
                         compute_capability=tuple(rec["compute_capability"]))


def test_one_entry_per_source_record():
    assert len(RECORDS) == SOURCE_COUNT == len(BY_ID)
    for rec in RECORDS:
        assert rec["source"] and rec["lines"], rec["record_id"]
        assert rec["usable"] or rec["why_not"].strip(), rec["record_id"]


def test_new_configs_name_their_source():
    for path in sorted((FIXTURES / "configs").glob("*.json")):
        config = json.loads(path.read_text())
        assert config.get("_source"), path.name
        assert isinstance(config.get("_verified"), bool), path.name


def test_gemma_cells_give_the_logged_swa_pool_size():
    # g001: "SWAKVPool mem usage: 3.18 GB" for 37,081 full and 29,664 sliding tokens.
    logged = BY_ID["g001"]["logged"]
    pool = logged["max_total_num_tokens"] * GEMMA_FULL_CELL + logged["swa_tokens"] * GEMMA_SWA_CELL
    assert round(pool / GIB, 2) == 3.18


def test_gemma_auto_mem_fraction_static():
    # SGLang chose 0.718 (the author's transcription): (32,607 - 512 - 4,096 x 1.5 - 128 - 32 x 2) /
    # 32,607 = 0.790 (decode graph to bs 32, no prefill graph: multimodal), x 0.95 x (1 - 0.1 x
    # (27 x 1152^2 / (24 x 1024^2) - 1)) for the 27-layer 1152-wide vision tower = 0.71869.
    rec = BY_ID["g001"]
    plan = plan_sglang(_spec(rec), _args(rec), gpu=rec["gpu"])
    vision_factor = 0.95 * (1 - 0.1 * (27 * 1152**2 / (24 * 1024**2) - 1))
    assert plan.budget.mem_fraction_static == pytest.approx(0.79 * vision_factor)
    assert int(plan.budget.mem_fraction_static * 1000) / 1000 == rec["logged"]["mem_fraction_static"]


@pytest.mark.parametrize("rec", USABLE, ids=[r["record_id"] for r in USABLE])
def test_pools_within_two_percent(rec):
    pools = _hkv_pools(rec)
    ours = {"max_total_num_tokens": pools.max_total_num_tokens, "swa_tokens": pools.swa_tokens,
            "max_mamba_cache_size": pools.max_mamba_cache_size,
            "max_running_requests": pools.max_running_requests,
            "context_len": pools.context_len}
    for name, logged in rec["logged"].items():
        if name not in ours:
            continue
        assert ours[name] == pytest.approx(logged, rel=TOLERANCE), (rec["record_id"], name, ours[name])
