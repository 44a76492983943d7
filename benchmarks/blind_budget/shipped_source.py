"""Writes a fit into planner/budget/budget_constants.py as SHIPPED (between its FIT markers)."""

from __future__ import annotations

from pathlib import Path

from hkv.planner.budget.budget_constants import BudgetConstants, GraphBytes

BEGIN = "# BEGIN FIT (benchmarks/bench_blind_budget.py --refit writes this block)\n"
END = "# END FIT\n"


def shipped_text(constants: BudgetConstants) -> str:
    lines = ["SHIPPED = BudgetConstants("]
    for name in constants.value_names():
        value = getattr(constants, name)
        text = (f"GraphBytes({value.first_capture_bytes}, {value.per_graph_tokens})" if isinstance(value, GraphBytes)
                else str(value))
        lines.append(f"    {name}={text},")
    lines.append("    fitted_on=(")
    for name, ids in constants.fitted_on:
        lines.append(f"        ({name!r}, {ids!r}),")
    lines.append("    ),")
    lines.append(")")
    return "\n".join(lines) + "\n"


def write_shipped(path: Path, constants: BudgetConstants) -> None:
    source = path.read_text()
    start, end = source.index(BEGIN) + len(BEGIN), source.index(END)
    path.write_text(source[:start] + shipped_text(constants) + source[end:])
