"""Sweep -> plain JSON-safe dict (`hkv plan --gpu A,B --tp 1,2 --format json`).

Each row carries the same per-layout dicts a single plan's JSON has under "layouts" (plan_json),
so a row can be compared with `hkv plan --gpu A --tp 1` key for key.
"""

from __future__ import annotations

from typing import Any

from hkv.planner.plan_json import SCHEMA_VERSION, plan_to_dict
from hkv.planner.sweep import SweepRow


def sweep_row_to_dict(row: SweepRow) -> dict[str, Any]:
    doc = plan_to_dict(row.plan)
    return {"gpu": row.gpu, "tp": row.tp, "fits": row.fits, "fit_verdict": row.plan.budget.fit_verdict,
            "budget": doc["budget"],
            "layouts": doc["layouts"], "skipped_layouts": doc["skipped_layouts"]}


def sweep_to_dict(rows: tuple[SweepRow, ...]) -> dict[str, Any]:
    """The model and the settings every row shares (from the first row's plan), then the rows."""
    first = plan_to_dict(rows[0].plan)
    return {
        "schema_version": SCHEMA_VERSION,
        "model": first["model"],
        "vllm_version": first["vllm_version"],
        "primary_layout": first["primary_layout"],
        "sweep": [sweep_row_to_dict(row) for row in rows],
    }
