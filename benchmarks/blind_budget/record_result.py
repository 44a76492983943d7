"""One start-up record planned blind: hkv's predictions beside what vLLM logged.

Blind means the plan gets only what a user knows before starting vLLM (the model's config, the GPU,
the engine flags): never the logged budget. The token band re-plans with the budget pinned at the
low and high ends of hkv's own available-memory band.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.budget_constants import SHIPPED, BudgetConstants
from hkv.planner.budget.memory_budget import MemoryBudget, compute_memory_budget
from hkv.planner.capacity.capacity import kv_cache_tokens
from hkv.planner.plan import build_layout, check_max_model_len, plan
from hkv.planner.plan_config import PlanConfig

GIB = 2**30
Planner = Callable[[ModelSpec, PlanConfig], tuple[MemoryBudget, "int | None"]]
LOG_LAYOUT = "vllm"  # the layout whose capacity lines are vLLM's own
# hkv figure -> the logged figure it is compared with: the device total and its requested share,
# then the budget's terms. The graph term is compared only where the release subtracts the printed
# estimate (vLLM 0.20+); before, vLLM prints it but takes nothing, and the captured pool
# (cuda_graph_actual_gib) is never part of the budget. Newer logs fold the estimate into the
# printed peak activation (vllm#49208), so activation differences there include it.
TERM_LOGS = {"total": "total_memory_gib", "requested": "requested_memory_gib", "weights": "weights_gib",
             "activation": "activation_peak_gib", "non_torch": "non_torch_gib", "cudagraph": "cuda_graph_est_gib"}


@dataclass(frozen=True)
class RecordResult:
    record_id: str
    logged: dict[str, float]
    vllm_started: bool
    error: str | None = None  # the plan raised: a failure of hkv, not of the benchmark
    fits: bool | None = None  # hkv's central estimate leaves a budget
    verdict: str | None = None  # MemoryBudget.fit_verdict: fits / may not fit / does not fit (band-aware)
    weights_gib: float | None = None
    available_gib: float | None = None
    available_band_gib: tuple[float, float] | None = None
    kv_cache_tokens: int | None = None
    token_band: tuple[int, int] | None = None
    terms_gib: dict[str, float] = field(default_factory=dict)  # hkv's figures of TERM_LOGS, GiB per rank
    graph_subtracted: bool = False  # the release takes the CUDA graph estimate out of the budget
    note: str = ""

    @property
    def false_no_fit(self) -> bool:
        """vLLM started, hkv says the model does not fit (even at its band's favourable end)."""
        return self.vllm_started and self.verdict == "does not fit"

    def logged_term(self, name: str) -> float | None:
        """The logged figure hkv's `name` is compared with; None where there is none to compare."""
        if name == "cudagraph" and not self.graph_subtracted:
            return None
        return self.logged.get(TERM_LOGS[name])

    def as_dict(self) -> dict[str, Any]:
        return {"record_id": self.record_id, "vllm_started": self.vllm_started, "error": self.error, "fits": self.fits,
                "verdict": self.verdict,
                "predicted": {"weights_gib": self.weights_gib, "available_kv_gib": self.available_gib,
                              "available_band_gib": self.available_band_gib, "kv_cache_tokens": self.kv_cache_tokens,
                              "token_band": self.token_band, "terms_gib": self.terms_gib},
                "graph_estimate_subtracted": self.graph_subtracted,
                "logged": self.logged, "note": self.note,
                "errors_pct": {"weights": pct_error(self.weights_gib, self.logged.get("weights_gib")),
                               # a refused start-up logs a negative budget: its check is `fits`, not a %
                               "available_kv": pct_error(self.available_gib, self.logged.get("available_kv_gib"))
                               if self.vllm_started else None,
                               "kv_cache_tokens": pct_error(self.kv_cache_tokens, self.logged.get("kv_cache_tokens"))}}


def pct_error(predicted: float | None, logged: float | None) -> float | None:
    """Signed error of `predicted` in % of `logged`; None when either is missing or logged is 0."""
    if predicted is None or logged is None or logged == 0:
        return None
    return (predicted - logged) / abs(logged) * 100


def source_of(rec: dict[str, Any]) -> str:
    """The author or machine a record came from (its records are left out together)."""
    return rec.get("source_group") or rec["record_id"]


def blind_inputs(rec: dict[str, Any], data_dir: Path) -> tuple[ModelSpec, PlanConfig]:
    """The model and the blind plan's config of one usable record (each config read once: every
    record is planned in sample, out of sample and calibrated, with its band ends)."""
    return _model_spec(str(data_dir / rec["model"])), PlanConfig(**rec["plan"])


@lru_cache(maxsize=None)
def _model_spec(path: str) -> ModelSpec:
    return load_model_spec(path)


def evaluate_record(rec: dict[str, Any], data_dir: Path, planner: Planner | None = None,
                    constants: BudgetConstants = SHIPPED) -> RecordResult:
    """Plan `rec` blind with `planner` (default vllm_layout_plan) under `constants`; any exception
    of hkv becomes the result's `error`."""
    planner = planner or vllm_layout_plan
    base = RecordResult(rec["record_id"], dict(rec["logged"]), rec.get("vllm_started", True), note=rec.get("notes", ""))
    try:
        model, cfg = blind_inputs(rec, data_dir)
        cfg = replace(cfg, budget_constants=constants)
        budget, tokens = planner(model, cfg)
    except Exception as err:  # noqa: BLE001 - the row reports whatever hkv raised
        return replace(base, error=f"{type(err).__name__}: {err}")
    low, high = budget.available_band
    terms = {"total": budget.total_bytes / GIB, "requested": budget.requested_bytes / GIB,
             **{t.name: t.bytes / GIB for t in budget.terms}}
    return replace(base, fits=budget.fits, verdict=budget.fit_verdict, weights_gib=budget.weights_bytes / GIB,
                   available_gib=budget.available_bytes / GIB, available_band_gib=(low / GIB, high / GIB),
                   kv_cache_tokens=tokens, token_band=_token_band(planner, model, cfg, low, high), terms_gib=terms,
                   graph_subtracted=cfg.vllm_rules().subtracts_cudagraph_estimate)


def full_plan(model: ModelSpec, cfg: PlanConfig) -> tuple[MemoryBudget, int | None]:
    """Budget and logged KV tokens from hkv.planner.plan.plan (every layout, sustained figures too)."""
    result = plan(model, cfg)
    report = result.reports.get(LOG_LAYOUT)
    return result.budget, None if report is None else report.capacity.kv_cache_tokens


def vllm_layout_plan(model: ModelSpec, cfg: PlanConfig) -> tuple[MemoryBudget, int]:
    """The same budget and token count through the steps plan() takes for the `vllm` layout alone.

    plan() also predicts every layout's sustained concurrency by walking max-length requests through
    the scheduler: minutes over these records at 262k-token lengths, and no part of this benchmark."""
    check_max_model_len(model, cfg)
    budget = compute_memory_budget(model, cfg)
    layout = build_layout(LOG_LAYOUT, model, cfg, budget)
    return budget, kv_cache_tokens(layout, cfg.vllm_rules().log_format)


def _token_band(planner: Planner, model: ModelSpec, cfg: PlanConfig, low_bytes: int,
                high_bytes: int) -> tuple[int, int] | None:
    ends = []
    for budget_bytes in (low_bytes, high_bytes):
        try:
            ends.append(planner(model, replace(cfg, available_kv_memory_bytes=budget_bytes))[1])
        except Exception:  # noqa: BLE001 - a band end hkv cannot plan leaves the band unknown
            return None
    if None in ends:
        return None
    return min(ends), max(ends)
