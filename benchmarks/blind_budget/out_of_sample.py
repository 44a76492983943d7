"""In-sample and leave-one-source-out scoring of the blind budget's fitted constants.

In sample: the constants fitted on every record score every record (what the shipped constants
do on the logs they came from). Out of sample: each source's records are scored under constants
re-fitted without any record of that source (hkv.planner.budget.fitted.fit), so no record is ever
scored by a constant it helped fit. Calibrated: within one source's machine and release, each
start-up calibrates the others (what `hkv plan --calibrate LOG` does for a user).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from blind_budget.record_result import GIB, Planner, RecordResult, blind_inputs, evaluate_record, source_of
from hkv.planner.budget.budget_constants import BudgetConstants
from hkv.planner.budget.fitted.calibration import calibrate
from hkv.planner.budget.fitted.fit import fit_budget_constants
from hkv.planner.budget.fitted.observation import BudgetObservation, LoggedBudget, observe

LOGGED_KEYS = ("available_kv_gib", "weights_gib", "cuda_graph_est_gib", "requested_memory_gib", "non_torch_gib")


def observations(records: Iterable[dict[str, Any]], data_dir: Path) -> list[BudgetObservation]:
    """One observation per record vLLM started; a record hkv cannot plan gives none (its row
    reports the failure)."""
    out = []
    for rec in records:
        if not rec.get("vllm_started", True):
            continue
        try:
            model, cfg = blind_inputs(rec, data_dir)
            logged = LoggedBudget(**{k: rec["logged"].get(k) for k in LOGGED_KEYS})
            out.append(observe(rec["record_id"], source_of(rec), model, cfg, logged,
                               fit=not rec.get("budget_inconsistent")))
        except Exception:  # noqa: BLE001 - the record's row reports the error
            continue
    return out


def in_sample(records: list[dict[str, Any]], data_dir: Path, planner: Planner,
              obs: list[BudgetObservation]) -> tuple[BudgetConstants, list[RecordResult]]:
    constants = fit_budget_constants(obs)
    return constants, [evaluate_record(rec, data_dir, planner, constants) for rec in records]


def out_of_sample(records: list[dict[str, Any]], data_dir: Path, planner: Planner,
                  obs: list[BudgetObservation]) -> tuple[list[RecordResult], dict[str, BudgetConstants]]:
    """Each record under constants fitted without its source; also the re-fit per source."""
    refits: dict[str, BudgetConstants] = {}
    results = []
    for rec in records:
        source = source_of(rec)
        if source not in refits:
            refits[source] = fit_budget_constants([o for o in obs if o.source != source])
        results.append(evaluate_record(rec, data_dir, planner, refits[source]))
    return results, refits


def constants_table_rows(constants: BudgetConstants) -> list[tuple[str, str, str]]:
    """(field, value, records it was fitted on) for people and docs/results.md."""
    rows = []
    for name in constants.value_names():
        value = getattr(constants, name)
        if hasattr(value, "first_capture_bytes"):
            text = f"{value.first_capture_bytes / 2**20:.2f} MiB first + {value.per_graph_tokens:.2f} tokens' live set/graph"
        elif isinstance(value, float):
            text = f"{value:,.0f} tokens"
        else:
            text = f"{value / GIB:.3f} GiB"
        rows.append((name, text, ", ".join(constants.records_of(name)) or "(none: fallback)"))
    return rows


def calibrated(records: list[dict[str, Any]], data_dir: Path, planner: Planner, obs: list[BudgetObservation],
               refits: dict[str, BudgetConstants]) -> list[tuple[str, RecordResult]]:
    """Every pair of start-ups from one source's machine and release: calibrated on the first
    (hkv.planner.budget.fitted.calibration, on top of the constants fitted without that source),
    scored on the second. Logs whose own figures do not add up are neither."""
    by_id = {o.record_id: o for o in obs if o.fit and o.overhead_bytes is not None}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for rec in records:
        o = by_id.get(rec["record_id"])
        if o is not None:
            groups.setdefault((o.source, o.machine), []).append(rec)
    pairs = []
    for (source, _), members in sorted(groups.items()):
        for calibrator in members:
            model, cfg = blind_inputs(calibrator, data_dir)
            calibration = calibrate(by_id[calibrator["record_id"]], log=calibrator["record_id"], model=model.name,
                                    gpu=cfg.gpu, vllm_version=str(cfg.vllm_rules().version),
                                    constants=refits[source])
            constants = calibration.apply(refits[source])
            pairs += [(calibrator["record_id"], evaluate_record(rec, data_dir, planner, constants))
                      for rec in members if rec is not calibrator]
    return pairs
