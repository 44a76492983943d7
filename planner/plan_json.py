"""Plan -> plain JSON-safe dict (`hkv plan --format json`); bump SCHEMA_VERSION on breaking changes."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from hkv.model_specs.cache_spec import AttentionCacheSpec
from hkv.planner.budget.budget_json import budget_to_dict
from hkv.planner.capacity.band import CapacityBand
from hkv.planner.layout import KVCacheGroup, Layout
from hkv.planner.plan import LayoutReport, Plan
from hkv.planner.plan_config import PlanConfig
from hkv.planner.startup import vllm_startup

SCHEMA_VERSION = 1


def group_to_dict(group: KVCacheGroup, layout: Layout) -> dict[str, Any]:
    spec = group.spec
    return {
        "kind": group.kind.value,
        "layers": list(group.layer_ids),
        "layer_names": list(group.layer_names),
        "num_layers": group.num_layers,
        "block_size": group.block_size,
        "page_size_bytes": group.page_size_bytes,
        "pool_id": group.pool_id,
        "window_len": spec.window_len if isinstance(spec, AttentionCacheSpec) else None,
        "chunk_len": spec.chunk_len if isinstance(spec, AttentionCacheSpec) else None,
        "blocks_per_request": group.blocks_per_request(layout.max_model_len, layout.in_flight_tokens),
    }


def layout_to_dict(report: LayoutReport) -> dict[str, Any]:
    layout = report.layout
    pools = layout.pools
    return {
        "num_blocks": sum(p.num_blocks for p in pools),
        "block_size": min((g.block_size for g in layout.groups), default=0),
        "bytes_per_block": max((p.bytes_per_block for p in pools), default=0),
        "padding_layers": layout.padding_slots(),
        "waste_fraction": report.waste_fraction,
        "ideal_bytes_per_request": report.ideal_bytes_per_request,
        "in_flight_tokens": layout.in_flight_tokens,
        "available_bytes": layout.available_bytes,
        "pools": [asdict(p) for p in pools],
        "groups": [group_to_dict(g, layout) for g in layout.groups],
        "capacity": asdict(report.capacity),
        "notes": list(layout.notes),
        "log_lines": list(report.log_lines),
    }


def config_to_dict(cfg: PlanConfig) -> dict[str, Any]:
    """The plan's options; the fitted budget constants stand as the calibration that changed them
    (its one-line note) or null for the shipped fit."""
    out = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.name != "budget_constants"}
    out["calibration"] = cfg.budget_constants.calibration_note or None
    return out


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    model = plan.model
    return {
        "schema_version": SCHEMA_VERSION,
        "model": {
            "name": model.name,
            "model_id": model.model_id,
            "model_type": model.model_type,
            "verified": model.verified,
            "num_hidden_layers": model.num_hidden_layers,
            "layer_mix": model.layer_mix(),
            "max_model_len": model.max_model_len,
            "num_params": model.num_params,
            "weights_bytes": model.weights_bytes,
            "weights_exact": model.weights_bytes_exact is not None,
            "weights_bytes_by_part": model.checkpoint_bytes.bytes_by_part if model.checkpoint_bytes else None,
            "source": model.source,  # "hub:<id>@<commit>", "hf-cache:<path>", "catalog:<name>" or a path
            "source_note": model.source_note,  # the fallback taken when the Hub could not be asked
        },
        "config": config_to_dict(plan.config),
        "vllm_version": plan.config.vllm_rules().name,  # the release the vllm layouts follow
        "block_size": asdict(plan.block) if plan.block is not None else None,  # in force, and why
        "budget": budget_to_dict(plan.budget),
        "primary_layout": plan.config.primary_layout,
        "layouts": {name: {**layout_to_dict(report), "capacity_band": _band_to_dict(plan.bands.get(name))}
                    for name, report in plan.reports.items()},
        "skipped_layouts": dict(plan.skipped),
        "startup": {"vllm": vllm_startup(plan).to_json()},  # what vLLM decides before it serves
    }


def _band_to_dict(band: CapacityBand | None) -> dict[str, Any] | None:
    """The layout's figures at the low and high end of the budget band ([low, high] pairs); None
    for an exact budget. sustained_concurrency is None where it was not searched."""
    if band is None:
        return None
    pair = lambda value: None if value is None else list(value)  # noqa: E731 - JSON arrays
    return {"available_bytes": [band.available_low_bytes, band.available_high_bytes],
            "kv_cache_tokens": pair(band.kv_cache_tokens), "logged_concurrency": pair(band.logged_concurrency),
            "sustained_concurrency": pair(band.sustained_concurrency), "max_context_len": pair(band.max_context_len)}
