"""The fitted constants of the blind budget, as one frozen value that a plan carries.

Every field is measured on real start-up logs by fitted/fit.py; `fitted_on` names the records each came
from. A plan takes `SHIPPED` (the fit on every shared start-up) unless it is given another value:
the blind-budget benchmark passes a re-fit without the scored source, so its out-of-sample error
never sees the record it scores.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class GraphBytes:
    """The CUDA graph estimate's bytes per decoder layer: the first capture of a mode, and each
    further graph (cudagraph_estimate.py has the formula)."""

    first_capture_bytes: int
    per_graph_bytes: int


@dataclass(frozen=True)
class BudgetConstants:
    """Bytes per rank. The residual band bounds what the point estimate of graphs + non-torch
    misses (activation errors included): real = predicted - residual_low .. predicted + residual_high."""

    context_bytes: int  # CUDA context + cuBLAS outside torch, TP 1, up to 0.26's accounting
    consumed_context_bytes: int  # the same under 0.27's "consumed memory" (persistent torch buffers too)
    comm_nvlink_bytes_per_tp_doubling: int  # NCCL + custom all-reduce, cards with NVLink / P2P
    comm_pcie_bytes_per_tp_doubling: int  # NCCL alone: custom all-reduce is off without P2P
    linear_attention_bytes: int  # gated-delta-net / KDA Triton kernels' workspaces
    unified_memory_bytes: int  # the host's share of a unified-memory device's free-memory drop
    dense_graph: GraphBytes
    moe_graph: GraphBytes
    residual_low_bytes: int
    residual_high_bytes: int
    # After calibrating on a user's own log: the same-machine residual band (fitted on shared records
    # from one source, machine and release: calibrated on one, scored on the others).
    calibrated_residual_low_bytes: int = 0
    calibrated_residual_high_bytes: int = 0
    fitted_on: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (field, record ids) for each fitted field
    # Set by a calibration (fitted/calibration.py), never by the fit: the user's own log's residual
    # (signed bytes, added to non-torch), the scale of its logged graph estimate, and what to say.
    calibration_offset_bytes: int = 0
    calibration_graph_scale: float = 1.0
    calibration_note: str = ""

    def records_of(self, name: str) -> tuple[str, ...]:
        """The record ids `name` was fitted on (empty: no record had the feature; its fallback applies)."""
        return dict(self.fitted_on).get(name, ())

    def value_names(self) -> tuple[str, ...]:
        """The fitted fields (not the provenance, not a calibration's)."""
        return tuple(f.name for f in fields(self) if f.name != "fitted_on" and not f.name.startswith("calibration_"))

    @property
    def calibrated(self) -> bool:
        return bool(self.calibration_note)


# The fit on every shared start-up (fitted/fit.py); values in bytes.
# BEGIN FIT (benchmarks/bench_blind_budget.py --refit writes this block)
SHIPPED = BudgetConstants(
    context_bytes=int(0.13 * GIB),
    consumed_context_bytes=int(0.4 * GIB),
    comm_nvlink_bytes_per_tp_doubling=int(0.42 * GIB),
    comm_pcie_bytes_per_tp_doubling=int(0.42 * GIB),
    linear_attention_bytes=int(0.45 * GIB),
    unified_memory_bytes=0,
    dense_graph=GraphBytes(4 * MIB, int(0.21 * MIB)),
    moe_graph=GraphBytes(10 * MIB, int(0.62 * MIB)),
    residual_low_bytes=int(0.5 * GIB),
    residual_high_bytes=int(0.5 * GIB),
)
# END FIT
