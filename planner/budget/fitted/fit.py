"""The fit of the blind budget's constants (budget_constants.py) on start-up observations.

Order, each step on what the steps before left:
1. the graph estimate's two constants (cudagraph_estimate.py): least squares on the logged
   "Estimated CUDA graph memory" in relative terms (each log weighs the same whatever its size);
2. non-torch samples: the non-torch figure where the log printed one, else the log's overhead less
   its graph bytes under step 1 (which then carries hkv's activation error too); the V2 runner's
   dense-profile tokens per layer (profile.v2_dense_layer_bytes) from the single-GPU logs of
   dense V2 models against the context of the others, then taken out of every sample;
3. the parts of non-torch, each the median over the logs that isolate it: the context (TP 1, no
   linear attention, discrete GPU; one value per accounting), TP communication per doubling
   (NVLink and PCIe apart), linear-attention kernels, unified memory's host share;
4. the residual bands, discrete GPUs and unified memory apart: an inner leave-one-source-out over
   the training logs (each source's residual under a fit without it), from its 5th to its 95th
   percentile; and the same-machine band a calibration leaves (calibrated_band).

Observations marked `fit=False` (a log whose own figures do not add up) are scored, never fitted on.

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
    """The constants fitted on `observations` (the bands from an inner leave-one-source-out)."""
    observations = [o for o in observations if o.fit]
    graph, graph_ids = _fit_graph([o for o in observations if _graph_logged(o)])
    provisional = BudgetConstants(0, 0, 0, 0, 0, 0, graph, 0, 0)
    samples = [(o, _non_torch_sample(o, provisional)) for o in observations
               if o.logged_non_torch_bytes is not None or o.overhead_bytes is not None]
    v2_tensors, v2_ids = _fit_v2_dense(samples)
    samples = [(o, v - int(v2_tensors * o.v2_dense_bytes)) for o, v in samples]
    parts = _NonTorchParts.fit(samples)
    constants = replace(provisional, **parts.values(), v2_dense_layer_tokens=v2_tensors,
                        fitted_on=(("graph", graph_ids), ("v2_dense_layer_tokens", v2_ids), *parts.records()))
    if not with_band:
        return constants
    residuals = inner_residuals(observations)
    discrete = [(o, r) for o, r in residuals if not o.setup.unified_memory]
    unified = [(o, r) for o, r in residuals if o.setup.unified_memory]
    low, high = band_of([r for _, r in discrete])
    unified_low, unified_high = band_of([r for _, r in unified]) if unified else (low, high)
    (cal_low, cal_high), cal_ids = calibrated_band(observations, constants)
    ids, unified_ids = tuple(o.record_id for o, _ in discrete), tuple(o.record_id for o, _ in unified)
    return replace(constants, residual_low_bytes=low, residual_high_bytes=high, unified_residual_low_bytes=unified_low,
                   unified_residual_high_bytes=unified_high, calibrated_residual_low_bytes=cal_low,
                   calibrated_residual_high_bytes=cal_high,
                   fitted_on=(*constants.fitted_on, ("residual_low_bytes", ids), ("residual_high_bytes", ids),
                              ("unified_residual_low_bytes", unified_ids or ids),
                              ("unified_residual_high_bytes", unified_ids or ids),
                              ("calibrated_residual_low_bytes", cal_ids), ("calibrated_residual_high_bytes", cal_ids)))


def _non_torch_sample(o: BudgetObservation, graphs: BudgetConstants) -> int:
    if o.logged_non_torch_bytes is not None:
        return o.logged_non_torch_bytes
    assert o.overhead_bytes is not None
    return o.overhead_bytes - o.graph_bytes(graphs)


def residual(observation: BudgetObservation, constants: BudgetConstants) -> int:
    """What graphs + non-torch took on this log beyond `constants`' prediction (bytes; needs overhead)."""
    assert observation.overhead_bytes is not None
    predicted = (observation.graph_bytes(constants) + observation.setup.bytes(constants)
                 + observation.v2_dense_extra(constants))
    return observation.overhead_bytes - predicted


def inner_residuals(observations: Sequence[BudgetObservation]) -> list[tuple[BudgetObservation, int]]:
    """Each log's residual under a fit without its source."""
    out = []
    for source in sorted({o.source for o in observations}):
        fitted = fit_budget_constants([o for o in observations if o.source != source], with_band=False)
        out += [(o, residual(o, fitted)) for o in observations if o.source == source and o.overhead_bytes is not None]
    return out


def band_of(residuals: Sequence[int]) -> tuple[int, int]:
    """(low, high) bytes: the 5th and 95th percentiles of `residuals`, each side at least 0."""
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


def _fit_v2_dense(samples: list[Sample]) -> tuple[float, tuple[str, ...]]:
    """Tokens' hidden states per layer of the V2 dense profile term: the median over single-GPU discrete logs of
    dense models on V2 of (sample - context) / unit, the context being the median of the single-GPU
    logs not on V2 under the same accounting (the other accounting's when it has none). 0 when no
    log is on V2 or none is off it."""
    plain = [(o, v) for o, v in samples if o.setup.tp == 1 and not o.setup.unified_memory
             and not o.setup.linear_attention]
    on_v2 = [(o, v) for o, v in plain if o.v2_dense_bytes]
    contexts = {}
    for consumed in (False, True):
        off = [v for o, v in plain if not o.v2_dense_bytes and o.setup.consumed_accounting is consumed]
        contexts[consumed] = median(off) if off else None
    if not on_v2 or all(c is None for c in contexts.values()):
        return 0.0, ()

    def context(o: BudgetObservation) -> float:
        own = contexts[o.setup.consumed_accounting]
        return own if own is not None else contexts[not o.setup.consumed_accounting]

    tensors = median((v - context(o)) / o.v2_dense_bytes for o, v in on_v2)
    return round(max(0.0, tensors), 1), tuple(o.record_id for o, _ in on_v2)


def _graph_logged(o: BudgetObservation) -> bool:
    return o.graph is not None and o.graph.graphs > 0 and o.logged_graph_bytes is not None and o.logged_graph_bytes > 0


def _fit_graph(obs: list[BudgetObservation]) -> tuple[GraphBytes, tuple[str, ...]]:
    """Least squares of logged = layers x (first + per-graph tokens x live bytes/token x further
    graphs), in relative residuals (each log weighs the same); one log, or a negative solution,
    fits the first-capture bytes alone. No log: nothing to subtract (0, 0)."""
    if not obs:
        return GraphBytes(0, 0.0), ()
    rows = [(o.graph.num_layers / o.logged_graph_bytes,
             o.graph.num_layers * o.graph.further_graphs * o.graph.live_bytes_per_token / o.logged_graph_bytes)
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
            return GraphBytes(int(first), round(per_graph, 4)), ids
    return GraphBytes(int(t1 / s11), 0.0), ids


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
