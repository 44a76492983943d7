"""The blind-budget data set (tests/data/vllm_startups/records.json) is well formed.

Each usable record's hkv inputs must build a PlanConfig and a ModelSpec; accuracy is the benchmark's
business (benchmarks/bench_blind_budget.py), not this file's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.plan_config import PlanConfig

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "vllm_startups"
RECORDS = json.loads((DATA_DIR / "records.json").read_text())
SOURCE_COUNT = 53 + 14  # records in shared/data/vllm_memory_logs/records.jsonl and records_2026_11.jsonl
USABLE = [r for r in RECORDS if r["usable"]]
# Configs whose model_type / layer kinds hkv cannot read yet: the records stay in the data set
# (their inputs are complete) and these cases flip to passing once hkv learns the family.
def test_one_entry_per_source_record_with_its_decision():
    assert len(RECORDS) == SOURCE_COUNT
    assert len({r["record_id"] for r in RECORDS}) == SOURCE_COUNT
    for rec in RECORDS:
        assert rec["source"], rec["record_id"]
        if rec["usable"]:
            assert {"model", "plan", "logged", "lines"} <= rec.keys(), rec["record_id"]
            assert rec["lines"], rec["record_id"]
        else:
            assert rec["why_not"].strip(), rec["record_id"]


def test_every_record_names_its_source_group():
    # Leave-one-source-out scoring holds out every record of one author / machine / write-up at once.
    for rec in RECORDS:
        assert isinstance(rec.get("source_group"), str) and rec["source_group"].strip(), rec["record_id"]
    groups = {r["source_group"] for r in RECORDS}
    assert {r["source_group"] for r in RECORDS if r["record_id"].startswith("r02")} & groups
    llm_d = {r["source_group"] for r in RECORDS if "llm-d/llm-d-benchmark" in r["source"]}
    assert len(llm_d) == 1


def test_usable_records_log_a_target():
    for rec in USABLE:
        logged = rec["logged"]
        assert "available_kv_gib" in logged or "kv_cache_tokens" in logged, rec["record_id"]


def test_configs_name_their_source():
    for path in sorted((DATA_DIR / "configs").glob("*.json")):
        config = json.loads(path.read_text())
        assert config.get("_source"), path.name
        assert isinstance(config.get("_verified"), bool), path.name


@pytest.mark.parametrize("rec", USABLE, ids=[r["record_id"] for r in USABLE])
def test_plan_inputs_parse(rec):
    cfg = PlanConfig(**rec["plan"])
    assert cfg.available_kv_memory_bytes is None  # blind: no budget from the log
    if cfg.gpu is not None:
        get_gpu(cfg.gpu)
    else:
        assert cfg.gpu_memory_bytes, rec["record_id"]


@pytest.mark.parametrize("rec", USABLE, ids=[r["record_id"] for r in USABLE])
def test_model_config_parses(rec):
    # Every usable record's config parses, GLM-5.2 (DSA) and DeepSeek-V4-Flash included since issue 25.
    spec = load_model_spec(str(DATA_DIR / rec["model"]))
    assert spec.num_params > 0
