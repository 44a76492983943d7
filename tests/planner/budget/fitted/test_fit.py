"""fit_budget_constants on hand-made observations whose constants are known by construction.

Each observation is built from chosen constants (context, communication, graph bytes), so the fit
must give them back exactly; expected values are the arithmetic written next to each case.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from hkv.planner.budget.budget_constants import GraphBytes
from hkv.planner.budget.cudagraph_estimate import CudagraphEstimate
from hkv.planner.budget.fitted.fit import band_of, fit_budget_constants, quantile, residual
from hkv.planner.budget.fitted.observation import BudgetObservation
from hkv.planner.budget.non_torch import NonTorchSetup

MIB = 2**20
GIB = 2**30


def obs(record_id: str, overhead: int | None, *, tp: int = 1, source: str | None = None, consumed: bool = False,
        nvlink: bool = True, linear: bool = False, unified: bool = False, graph: CudagraphEstimate | None = None,
        logged_graph: int | None = None, subtracted: bool = False, logged_non_torch: int | None = None,
        fit: bool = True, machine: str = "h100@0.11.0") -> BudgetObservation:
    setup = NonTorchSetup(tp, consumed_accounting=consumed, nvlink=nvlink, linear_attention=linear,
                          unified_memory=unified)
    return BudgetObservation(record_id, source or record_id, machine, setup, graph, subtracted, logged_graph, overhead,
                             fit=fit, logged_non_torch_bytes=logged_non_torch)


def test_context_is_the_median_of_single_gpu_logs() -> None:
    fitted = fit_budget_constants([obs("a", 100 * MIB), obs("b", 140 * MIB), obs("c", 130 * MIB)], with_band=False)
    assert fitted.context_bytes == 130 * MIB
    # no 0.27+ log: the consumed accounting falls back to its sibling, with the sibling's records
    assert fitted.consumed_context_bytes == 130 * MIB
    assert fitted.records_of("context_bytes") == ("a", "b", "c")


def test_communication_per_tp_doubling_apart_by_link() -> None:
    logs = [obs("tp1", 100 * MIB),
            obs("nv2", 100 * MIB + 400 * MIB, tp=2), obs("nv8", 100 * MIB + 3 * 420 * MIB, tp=8),
            obs("pcie4", 100 * MIB + 2 * 20 * MIB, tp=4, nvlink=False)]
    fitted = fit_budget_constants(logs, with_band=False)
    assert fitted.comm_nvlink_bytes_per_tp_doubling == 410 * MIB  # median of 400 and 420
    assert fitted.comm_pcie_bytes_per_tp_doubling == 20 * MIB
    assert fitted.records_of("comm_pcie_bytes_per_tp_doubling") == ("pcie4",)


def test_logged_non_torch_wins_over_the_derived_overhead() -> None:
    # the overhead carries a 4 GiB activation miss; the printed non-torch figure does not
    logs = [obs("tp1", 100 * MIB), obs("tp4", 4 * GIB, tp=4, logged_non_torch=100 * MIB + 2 * 300 * MIB)]
    assert fit_budget_constants(logs, with_band=False).comm_nvlink_bytes_per_tp_doubling == 300 * MIB


def test_linear_attention_and_unified_memory_parts() -> None:
    logs = [obs("tp1", 100 * MIB), obs("gdn", 100 * MIB + 450 * MIB, linear=True),
            obs("spark", 100 * MIB + 450 * MIB + GIB, linear=True, unified=True, nvlink=False)]
    fitted = fit_budget_constants(logs, with_band=False)
    assert (fitted.linear_attention_bytes, fitted.unified_memory_bytes) == (450 * MIB, GIB)


def test_graph_constants_recovered_by_least_squares() -> None:
    # layers x (10 MiB + 3 tokens x live bytes/token x further graphs), two logs with other shapes
    first, tokens = 10 * MIB, 3.0
    graphs = [CudagraphEstimate(32, 51, 35, moe=False, live_bytes_per_token=81_920),
              CudagraphEstimate(48, 5, 4, moe=True, live_bytes_per_token=39_936)]
    logs = [obs(f"g{i}", None, graph=g, logged_graph=int(g.num_layers * (first + tokens * g.live_bytes_per_token
                                                                          * g.further_graphs)))
            for i, g in enumerate(graphs)]
    fitted = fit_budget_constants(logs, with_band=False)
    assert fitted.graph.first_capture_bytes == pytest.approx(first, abs=2)
    assert fitted.graph.per_graph_tokens == pytest.approx(tokens, abs=1e-4)
    # 32 x (10,485,760 + 3 x 81,920 x 84 = 20,643,840) = 32 x 31,129,600 = 996,147,200 bytes
    assert graphs[0].bytes_per_layer(GraphBytes(first, tokens)) == 996_147_200


def test_one_graph_log_fits_the_first_capture_alone() -> None:
    g = CudagraphEstimate(40, 1, 1, moe=True, live_bytes_per_token=45_056)  # no further graph
    fitted = fit_budget_constants([obs("r014", None, graph=g, logged_graph=40 * 11 * MIB)], with_band=False)
    assert fitted.graph == GraphBytes(11 * MIB, 0.0)


def test_a_log_that_does_not_add_up_is_not_fitted_on() -> None:
    logs = [obs("a", 100 * MIB), obs("b", 120 * MIB), obs("bad", -4 * GIB, fit=False)]
    fitted = fit_budget_constants(logs, with_band=False)
    assert fitted.context_bytes == 110 * MIB
    assert "bad" not in fitted.records_of("context_bytes")


def test_quantile_and_band() -> None:
    assert quantile([0, 10, 20, 30, 40], 0.5) == 20
    assert quantile([0, 10], 0.25) == 2.5  # linear between order statistics
    # 21 residuals -10..10: the 5th percentile is -9, the 95th 9
    assert band_of(list(range(-10, 11))) == (9, 9)
    assert band_of([5, 6, 7]) == (0, 6)  # 6 + 0.9 x 1 = 6.9, whole bytes; a side never goes below 0
    assert band_of([]) == (0, 0)


def test_band_comes_from_residuals_of_fits_without_the_source() -> None:
    # four sources at 100-130 MiB: each residual is the value less the median of the other three
    logs = [obs(name, value * MIB) for name, value in (("a", 100), ("b", 110), ("c", 120), ("d", 130))]
    fitted = fit_budget_constants(logs)
    # residuals: a 100-120 = -20, b 110-120 = -10, c 120-110 = +10, d 130-110 = +20 (MiB)
    # 5th percentile: -20 + 0.15 x 10 = -18.5; 95th: 10 + 0.85 x 10 = 18.5
    assert fitted.residual_low_bytes == pytest.approx(18.5 * MIB, abs=1)  # float interpolation, whole bytes
    assert fitted.residual_high_bytes == pytest.approx(18.5 * MIB, abs=1)


def test_calibrated_band_within_one_machine() -> None:
    logs = [obs("a", 100 * MIB, source="lab", machine="h100@0.11.0"), obs("b", 150 * MIB, source="lab"),
            obs("c", 400 * MIB, source="other", machine="l40s@0.25.1")]
    fitted = fit_budget_constants(logs)
    # the lab's pair differs by 50 MiB either way; "other" has no sibling
    assert (fitted.calibrated_residual_low_bytes, fitted.calibrated_residual_high_bytes) == (int(45 * MIB),
                                                                                            int(45 * MIB))
    assert fitted.records_of("calibrated_residual_low_bytes") == ("a", "b")


def test_residual_is_overhead_less_graph_and_non_torch() -> None:
    g = CudagraphEstimate(10, 3, 2, moe=False, live_bytes_per_token=1000)
    o = obs("x", 2 * GIB, graph=g, subtracted=True)
    constants = replace(fit_budget_constants([obs("a", 100 * MIB)], with_band=False), graph=GraphBytes(MIB, 2.0))
    graph_bytes = 10 * (MIB + 2.0 * 1000 * 3)
    assert residual(o, constants) == 2 * GIB - graph_bytes - 100 * MIB
