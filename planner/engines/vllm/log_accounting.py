"""Does a log's own arithmetic add up, and under which of vLLM's accounting rules?

vLLM sizes the KV cache as requested - (the non-KV terms), and which terms changed over releases
(shared/reference/engines-and-budgets.md, vllm/v1/worker/gpu_worker.py of each wheel):

    graph not subtracted    available = requested - weights - activation - non-torch
                            (before 0.20; VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0; the V2 model
                            runner before 0.29, whose estimate is 0)
    graph estimate          available = requested - weights - activation - non-torch - estimate
    subtracted              (0.20-0.26 with the V1 runner)
    consumed                available = requested - consumed (weights + non-torch) - peak activation,
                            the peak holding the subtracted estimate (0.27+)

Each rule is checked on the printed figures it needs; it holds when the residual is within the
figures' rounding. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hkv.planner.engines.logged_figure import GIB, LoggedFigure
from hkv.planner.engines.vllm.logged_memory import LoggedMemory
from hkv.planner.engines.vllm.rules import VllmRules

NOT_SUBTRACTED = "graph estimate not subtracted"
SUBTRACTED = "graph estimate subtracted"
CONSUMED = "consumed + peak (0.27+)"
_Terms = Callable[[LoggedMemory], tuple[tuple[str, LoggedFigure | None], ...]]


def _pure_peak(m: LoggedMemory) -> LoggedFigure | None:
    """The activation peak without graphs: the debug/V0 torch peak, or the 0.10-0.26 usage line's."""
    if m.torch_peak is not None:
        return m.torch_peak
    return m.peak_activation if m.usage_format == "split" else None


_RULES: dict[str, _Terms] = {
    NOT_SUBTRACTED: lambda m: (("weights", m.weights), ("activation", _pure_peak(m)), ("non-torch", m.non_torch)),
    SUBTRACTED: lambda m: (("weights", m.weights), ("activation", _pure_peak(m)), ("non-torch", m.non_torch),
                           ("graph estimate", m.graph_estimate)),
    CONSUMED: lambda m: (("consumed", m.consumed), ("peak activation", m.peak_activation)),
}


@dataclass(frozen=True)
class AccountingCheck:
    expected_rule: str  # the rule the release (and runner) should follow
    matching_rules: tuple[str, ...]  # the rules the printed figures satisfy
    tested_rules: tuple[str, ...]  # the rules the log printed enough figures for
    sentence: str  # the arithmetic of the expected rule (or the first tested one)
    residual_bytes: int  # requested - terms - available, for that rule

    @property
    def adds_up(self) -> bool:
        return bool(self.matching_rules)

    @property
    def follows_release(self) -> bool:
        return self.expected_rule in self.matching_rules or self.expected_rule not in self.tested_rules


def expected_rule(m: LoggedMemory, rules: VllmRules, v2_runner: bool | None) -> str:
    if m.usage_format == "consumed" or (m.usage_format is None and rules.profile_consumed_accounting
                                        and m.consumed is not None):
        return CONSUMED
    estimates = rules.v2_estimates_cudagraphs or not v2_runner
    if rules.subtracts_cudagraph_estimate and estimates and not m.graph_estimate_disabled:
        return SUBTRACTED
    return NOT_SUBTRACTED


def check_accounting(m: LoggedMemory, rules: VllmRules, v2_runner: bool | None) -> AccountingCheck | None:
    """None when the log lacks requested or available, or every rule lacks a figure."""
    if m.requested is None or m.available is None:
        return None
    expected = expected_rule(m, rules, v2_runner)
    tested: dict[str, tuple[int, int, str]] = {}
    for name, terms_of in _RULES.items():
        terms = terms_of(m)
        if any(figure is None for _, figure in terms):
            continue
        figures = [figure for _, figure in terms if figure is not None]
        residual = m.requested.bytes - sum(f.bytes for f in figures) - m.available.bytes
        tolerance = m.requested.half_unit_bytes + m.available.half_unit_bytes + sum(f.half_unit_bytes
                                                                                    for f in figures)
        shown = " - ".join([f"requested {m.requested.text}", *(f"{label} {f.text}" for label, f in terms
                                                               if f is not None)])
        tested[name] = residual, tolerance, f"{shown} = {_gib(m.requested.bytes - sum(f.bytes for f in figures))}"
    if not tested:
        return None
    shown_rule = expected if expected in tested else next(iter(tested))
    residual, _, arithmetic = tested[shown_rule]
    matching = tuple(name for name, (res, tol, _) in tested.items() if abs(res) <= tol)
    sentence = f"{shown_rule}: {arithmetic} GiB vs available {m.available.text} GiB"
    return AccountingCheck(expected, matching, tuple(tested), sentence, residual)


def _gib(num_bytes: int) -> str:
    return f"{num_bytes / GIB:.2f}"
