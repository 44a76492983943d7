"""The fit of the blind budget's constants (budget_constants.py) on start-up observations.

Order, each step on what the steps before left:
1. graph bytes per layer, dense and MoE apart: least squares on the logged "Estimated CUDA graph
   memory" in relative terms (each log weighs the same whatever its size); a class without two
   usable logs scales the other class's shape;
2. non-torch samples: each log's overhead less its graph bytes under step 1;
3. the parts of non-torch, each the median over the logs that isolate it: the context (TP 1, no
   linear attention, discrete GPU; one value per accounting), TP communication per doubling
   (NVLink and PCIe apart), linear-attention kernels, unified memory's host share;
4. the residual band: an inner leave-one-source-out over the training logs (each source's
   residual under a fit without it), from its 5th to its 95th percentile.

A part no training log isolates falls back to its sibling's value (the other accounting, the
other link) or to 0 (kernels, host share): never to a value fitted on the left-out records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from math import log2
from statistics import median

from hkv.planner.budget.budget_constants import BudgetConstants, GraphBytes
from hkv.planner.budget.fitted.observation import BudgetObservation

BAND_QUANTILES = (0.05, 0.95)


def fit_budget_constants(observations: Sequence[BudgetObservation], *, with_band: bool = True) -> BudgetConstants:
    """The constants fitted on `observations` (the band from an inner leave-one-source-out)."""
    dense, dense_ids = _fit_graph([o for o in observations if _graph_logged(o) and not o.graph.moe])
    moe, moe_ids = _fit_graph([o for o in observations if _graph_logged(o) and o.graph.moe])
    dense, moe = _fill_graph(dense, moe), _fill_graph(moe, dense)
    provisional = BudgetConstants(0, 0, 0, 0, 0, 0, dense or GraphBytes(0, 0), moe or GraphBytes(0, 0), 0, 0)
    samples = [(o, o.overhead_bytes - o.graph_bytes(provisional)) for o in observations if o.overhead_bytes is not None]
    parts = _NonTorchParts.fit(samples)
    constants = replace(provisional, **parts.values(),
                        fitted_on=(("dense_graph", dense_ids), ("moe_graph", moe_ids), *parts.records()))
    if not with_band:
        return constants
    low, high = residual_band(observations)
    ids = tuple(o.record_id for o, _ in samples)
    (cal_low, cal_high), cal_ids = calibrated_band(observations, constants)
    return replace(constants, residual_low_bytes=low, residual_high_bytes=high, calibrated_residual_low_bytes=cal_low,
                   calibrated_residual_high_bytes=cal_high,
                   fitted_on=(*constants.fitted_on, ("residual_low_bytes", ids), ("residual_high_bytes", ids),
                              ("calibrated_residual_low_bytes", cal_ids), ("calibrated_residual_high_bytes", cal_ids)))


def residual(observation: BudgetObservation, constants: BudgetConstants) -> int:
    """What graphs + non-torch took on this log beyond `constants`' prediction (bytes; needs overhead)."""
    assert observation.overhead_bytes is not None
    predicted = observation.graph_bytes(constants) + observation.setup.bytes(constants)
    return observation.overhead_bytes - predicted


def residual_band(observations: Sequence[BudgetObservation]) -> tuple[int, int]:
    """(low, high) bytes from each source's residuals under a fit without that source."""
    residuals = []
    for source in sorted({o.source for o in observations}):
        held_in = [o for o in observations if o.source != source]
        fitted = fit_budget_constants(held_in, with_band=False)
        residuals += [residual(o, fitted) for o in observations if o.source == source and o.overhead_bytes is not None]
    if not residuals:
        return 0, 0
    return max(0, -int(quantile(residuals, BAND_QUANTILES[0]))), max(0, int(quantile(residuals, BAND_QUANTILES[1])))


def calibrated_band(observations: Sequence[BudgetObservation],
                    constants: BudgetConstants) -> tuple[tuple[int, int], tuple[str, ...]]:
    """(low, high) bytes of what a calibration leaves: within each source's machine, every log
    calibrates the others (the difference of their residuals); the 5th to 95th percentile, and the
    records it came from. (0, 0) when no machine has two logs."""
    groups: dict[tuple[str, str], list[BudgetObservation]] = {}
    for o in observations:
        if o.overhead_bytes is not None:
            groups.setdefault((o.source, o.machine), []).append(o)
    differences, ids = [], []
    for members in groups.values():
        if len(members) < 2:
            continue
        ids += [o.record_id for o in members]
        for calibrator in members:
            differences += [residual(o, constants) - residual(calibrator, constants) for o in members if o is not calibrator]
    if not differences:
        return (0, 0), ()
    low, high = quantile(differences, BAND_QUANTILES[0]), quantile(differences, BAND_QUANTILES[1])
    return (max(0, -int(low)), max(0, int(high))), tuple(ids)


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile with linear interpolation between order statistics (numpy's default)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def _graph_logged(o: BudgetObservation) -> bool:
    return o.graph is not None and o.graph.graphs > 0 and o.logged_graph_bytes is not None and o.logged_graph_bytes > 0


def _fit_graph(obs: list[BudgetObservation]) -> tuple[GraphBytes | None, tuple[str, ...]]:
    """Least squares of logged = layers x (first + per_graph x further graphs), relative residuals;
    one log (or a negative solution) fits the first-capture bytes alone."""
    if not obs:
        return None, ()
    rows = [(o.graph.num_layers / o.logged_graph_bytes, o.graph.num_layers * o.graph.further_graphs / o.logged_graph_bytes)
            for o in obs]
    ids = tuple(o.record_id for o in obs)
    s11 = sum(a * a for a, _ in rows)
    s12 = sum(a * b for a, b in rows)
    s22 = sum(b * b for _, b in rows)
    t1 = sum(a for a, _ in rows)
    t2 = sum(b for _, b in rows)
    det = s11 * s22 - s12 * s12
    if len(obs) >= 2 and det > 1e-12 * s11 * s22:
        first = (t1 * s22 - t2 * s12) / det
        per_graph = (s11 * t2 - s12 * t1) / det
        if first >= 0 and per_graph >= 0:
            return GraphBytes(int(first), int(per_graph)), ids
    return GraphBytes(int(t1 / s11), 0), ids


def _fill_graph(own: GraphBytes | None, other: GraphBytes | None) -> GraphBytes | None:
    return own if own is not None else other


Sample = tuple[BudgetObservation, int]


@dataclass(frozen=True)
class _NonTorchParts:
    context: tuple[int, tuple[str, ...]]
    consumed_context: tuple[int, tuple[str, ...]]
    comm_nvlink: tuple[int, tuple[str, ...]]
    comm_pcie: tuple[int, tuple[str, ...]]
    linear: tuple[int, tuple[str, ...]]
    unified: tuple[int, tuple[str, ...]]

    @classmethod
    def fit(cls, samples: list[Sample]) -> _NonTorchParts:
        plain = [(o, v) for o, v in samples if not o.setup.linear_attention and not o.setup.unified_memory]
        single = [(o, v) for o, v in plain if o.setup.tp == 1]
        context = _median_part(single, lambda o, v: v, lambda o: not o.setup.consumed_accounting)
        consumed = _median_part(single, lambda o, v: v, lambda o: o.setup.consumed_accounting)
        context, consumed = _or(context, consumed), _or(consumed, context)

        def base(o: BudgetObservation) -> int:
            return (consumed if o.setup.consumed_accounting else context)[0]

        def per_doubling(o: BudgetObservation, v: int) -> float:
            return (v - base(o)) / log2(o.setup.tp)

        multi = [(o, v) for o, v in plain if o.setup.tp > 1]
        nvlink = _median_part(multi, per_doubling, lambda o: o.setup.nvlink)
        pcie = _median_part(multi, per_doubling, lambda o: not o.setup.nvlink)
        nvlink, pcie = _or(nvlink, pcie), _or(pcie, nvlink)

        def comm(o: BudgetObservation) -> int:
            return int((nvlink if o.setup.nvlink else pcie)[0] * log2(o.setup.tp)) if o.setup.tp > 1 else 0

        discrete = [(o, v) for o, v in samples if not o.setup.unified_memory]
        linear = _or(_median_part(discrete, lambda o, v: v - base(o) - comm(o), lambda o: o.setup.linear_attention),
                     None)
        kernels = linear[0]
        unified = _median_part(
            samples,
            lambda o, v: v - base(o) - comm(o) - (kernels if o.setup.linear_attention else 0) - o.setup.pinned_host_bytes,
            lambda o: o.setup.unified_memory)
        return cls(context, consumed, nvlink, pcie, linear, _or(unified, None))

    def values(self) -> dict[str, int]:
        return {"context_bytes": self.context[0], "consumed_context_bytes": self.consumed_context[0],
                "comm_nvlink_bytes_per_tp_doubling": self.comm_nvlink[0],
                "comm_pcie_bytes_per_tp_doubling": self.comm_pcie[0], "linear_attention_bytes": self.linear[0],
                "unified_memory_bytes": self.unified[0]}

    def records(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        names = ("context_bytes", "consumed_context_bytes", "comm_nvlink_bytes_per_tp_doubling",
                 "comm_pcie_bytes_per_tp_doubling", "linear_attention_bytes", "unified_memory_bytes")
        parts = (self.context, self.consumed_context, self.comm_nvlink, self.comm_pcie, self.linear, self.unified)
        return tuple((name, part[1]) for name, part in zip(names, parts, strict=True))


def _median_part(samples: list[Sample], value: Callable[[BudgetObservation, int], float],
                 keep: Callable[[BudgetObservation], bool]) -> tuple[int, tuple[str, ...]] | None:
    """The median of `value` over the kept samples, clamped at 0, with their record ids; None if none."""
    kept = [(o, v) for o, v in samples if keep(o)]
    if not kept:
        return None
    return max(0, int(median(value(o, v) for o, v in kept))), tuple(o.record_id for o, _ in kept)


def _or(part: tuple[int, tuple[str, ...]] | None, fallback: tuple[int, tuple[str, ...]] | None) -> tuple[int, tuple[str, ...]]:
    """`part`, else its sibling's value (with the sibling's records), else 0 fitted on nothing."""
    if part is not None:
        return part
    return fallback if fallback is not None else (0, ())
