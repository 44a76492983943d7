"""The benchmark's verdict over all records: MAPEs, false "does not fit", band coverage, per-term errors."""

from __future__ import annotations

from statistics import mean, median
from typing import Any

from blind_budget.record_result import TERM_LOGS, RecordResult, pct_error


def summarize(results: list[RecordResult]) -> dict[str, Any]:
    """Metrics over records vLLM started (negative records only count in the no-fit checks)."""
    started = [r for r in results if r.vllm_started]
    planned = [r for r in started if r.error is None]
    avail = [r for r in planned if "available_kv_gib" in r.logged]
    tokens = [r for r in planned if "kv_cache_tokens" in r.logged and r.kv_cache_tokens is not None]
    negatives = [r for r in results if not r.vllm_started]
    weighed = [r for r in results if r.error is None and r.logged.get("weights_gib") and r.weights_gib is not None]
    return {
        "records": len(results),
        "plan_failures": [r.record_id for r in results if r.error is not None],
        "available_mape_pct": _mape([(r.available_gib, r.logged["available_kv_gib"]) for r in avail]),
        "available_n": len(avail),
        "available_logged_n": sum("available_kv_gib" in r.logged for r in started),
        "tokens_mape_pct": _mape([(r.kv_cache_tokens, r.logged["kv_cache_tokens"]) for r in tokens]),
        "tokens_n": len(tokens),
        "tokens_logged_n": sum("kv_cache_tokens" in r.logged for r in started),
        "false_no_fit": [r.record_id for r in started if r.false_no_fit],
        "negatives_caught": [r.record_id for r in negatives if r.verdict in ("may not fit", "does not fit")],
        "negatives_missed": [r.record_id for r in negatives if r.verdict not in ("may not fit", "does not fit")],
        "available_in_band": sum(_inside(r.logged["available_kv_gib"], r.available_band_gib) for r in avail),
        "tokens_in_band": sum(_inside(r.logged["kv_cache_tokens"], r.token_band) for r in tokens),
        "tokens_band_half_width_median_pct": _median_half_width(tokens),
        "weights_within_1pct": sum(abs(pct_error(r.weights_gib, r.logged["weights_gib"])) <= 1 for r in weighed),
        "weights_n": len(weighed),
        "weights_off": [r.record_id for r in weighed if abs(pct_error(r.weights_gib, r.logged["weights_gib"])) > 1],
        "terms": {name: _term_stats(planned, name) for name in TERM_LOGS},
    }


def _mape(pairs: list[tuple[float, float]]) -> float | None:
    errors = [abs(pct_error(p, lg)) for p, lg in pairs if pct_error(p, lg) is not None]
    return mean(errors) if errors else None


def _median_half_width(tokens: list[RecordResult]) -> float | None:
    """The token band's median half-width, in % of hkv's point estimate."""
    widths = [(r.token_band[1] - r.token_band[0]) / 2 / r.kv_cache_tokens * 100 for r in tokens
              if r.token_band is not None and r.kv_cache_tokens]
    return median(widths) if widths else None


def _inside(value: float, band: tuple[float, float] | None) -> bool:
    return band is not None and band[0] <= value <= band[1]


def _term_stats(planned: list[RecordResult], name: str) -> dict[str, Any]:
    """Mean signed and absolute error (GiB) of one term over records that log it."""
    diffs = [r.terms_gib.get(name, 0.0) - r.logged_term(name) for r in planned if r.logged_term(name) is not None]
    if not diffs:
        return {"n": 0, "mean_error_gib": None, "mean_abs_error_gib": None}
    return {"n": len(diffs), "mean_error_gib": mean(diffs), "mean_abs_error_gib": mean(abs(d) for d in diffs)}


def summarize_calibrated(pairs: list[tuple[str, RecordResult]]) -> dict[str, Any]:
    """Calibrated on one start-up, scored on another of the same source's machine and release."""
    avail = [(c, r) for c, r in pairs if r.error is None and "available_kv_gib" in r.logged and r.available_gib is not None]
    tokens = [(c, r) for c, r in pairs if r.error is None and "kv_cache_tokens" in r.logged and r.kv_cache_tokens]
    return {
        "pairs": len(pairs),
        "machines": sorted({r.record_id for _, r in pairs}),
        "available_mape_pct": _mape([(r.available_gib, r.logged["available_kv_gib"]) for _, r in avail]),
        "available_n": len(avail),
        "tokens_mape_pct": _mape([(r.kv_cache_tokens, r.logged["kv_cache_tokens"]) for _, r in tokens]),
        "tokens_n": len(tokens),
        "available_in_band": sum(_inside(r.logged["available_kv_gib"], r.available_band_gib) for _, r in avail),
        "worst": max(((abs(pct_error(r.available_gib, r.logged["available_kv_gib"])), c, r.record_id) for c, r in avail),
                     default=None),
    }
