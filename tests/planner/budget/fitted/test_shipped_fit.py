"""The shipped constants are the fit on every shared start-up, and a re-fit without a source never
learns from it (what makes benchmarks/bench_blind_budget.py's leave-one-source-out honest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.budget_constants import SHIPPED
from hkv.planner.budget.fitted.fit import fit_budget_constants
from hkv.planner.budget.fitted.observation import BudgetObservation, LoggedBudget, observe
from hkv.planner.plan_config import PlanConfig

DATA_DIR = Path(__file__).resolve().parents[3] / "data" / "vllm_startups"
LOGGED_KEYS = ("available_kv_gib", "weights_gib", "cuda_graph_est_gib", "requested_memory_gib", "non_torch_gib")


@pytest.fixture(scope="module")
def observations() -> list[BudgetObservation]:
    out = []
    for rec in json.loads((DATA_DIR / "records.json").read_text()):
        if not rec["usable"] or not rec.get("vllm_started", True):
            continue
        model = load_model_spec(str(DATA_DIR / rec["model"]))
        logged = LoggedBudget(**{k: rec["logged"].get(k) for k in LOGGED_KEYS})
        out.append(observe(rec["record_id"], rec["source_group"], model, PlanConfig(**rec["plan"]), logged,
                           fit=not rec.get("budget_inconsistent")))
    return out


def test_shipped_constants_are_the_fit_on_every_record(observations: list[BudgetObservation]) -> None:
    """`benchmarks/bench_blind_budget.py --refit` wrote SHIPPED from these records; a change to a
    term's mechanism or to the records needs that rerun."""
    assert fit_budget_constants(observations) == SHIPPED


def test_a_refit_without_a_source_never_names_its_records(observations: list[BudgetObservation]) -> None:
    for source in sorted({o.source for o in observations}):
        held_out = {o.record_id for o in observations if o.source == source}
        refit = fit_budget_constants([o for o in observations if o.source != source], with_band=False)
        used = {rid for _, ids in refit.fitted_on for rid in ids}
        assert not used & held_out, source


def test_every_fitted_constant_names_its_records() -> None:
    for name in SHIPPED.value_names():
        assert SHIPPED.records_of(name), name
