"""MemoryBudget -> a JSON-native dict: every figure in bytes, each term with its source and band."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from hkv.planner.budget.memory_budget import MemoryBudget


def budget_to_dict(budget: MemoryBudget) -> dict[str, Any]:
    """The budget's scalar fields, requested_bytes, `available_band` [low, high] and `terms` (a list
    of {name, bytes, source, low_bytes, high_bytes, note}); lossless through json.dumps."""
    scalars = {f.name: getattr(budget, f.name) for f in fields(budget)
               if f.name not in ("terms", "available_low_bytes", "available_high_bytes")}
    low, high = budget.available_band
    return {**scalars, "requested_bytes": budget.requested_bytes, "fit_verdict": budget.fit_verdict,
            "available_band": {"low_bytes": low, "high_bytes": high},
            "terms": [asdict(term) for term in budget.terms]}
