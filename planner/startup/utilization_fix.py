"""The smallest --gpu-memory-utilization (in hundredths, as people pass it) that leaves a KV need."""

from __future__ import annotations

from math import ceil

from hkv.planner.budget.memory_budget import MemoryBudget

MAX_UTILIZATION = 1.0  # vLLM accepts (0, 1]


def overhead_bytes(budget: MemoryBudget) -> int:
    """What the budget takes before the KV cache: weights and the profile's terms."""
    return sum(t.bytes for t in budget.terms)


def utilization_for(budget: MemoryBudget, needed_available_bytes: int, overhead: int | None = None) -> float | None:
    """Smallest g (two decimals) with ceil(total x g) - overhead >= needed; None for a given
    (exact) budget, which has no utilization to raise, or when even 1.0 leaves too little."""
    if budget.exact or budget.total_bytes <= 0:
        return None
    overhead = overhead_bytes(budget) if overhead is None else overhead
    hundredths = -(-(needed_available_bytes + overhead) * 100 // budget.total_bytes)
    while hundredths <= 100 and ceil(budget.total_bytes * hundredths / 100) - overhead < needed_available_bytes:
        hundredths += 1
    g = hundredths / 100
    return g if g <= MAX_UTILIZATION else None
