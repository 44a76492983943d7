"""Calibration: one start-up log of the user's, carried to other plans on that machine and release.

The log's overhead (requested - weights - available - hkv's activation, observation.py) less
hkv's graph estimate and non-torch point is that setup's residual: the context, drivers and
kernels of that machine and release that the shipped constants only know on average. A plan
calibrated on it adds the residual to its non-torch term and scales its graph estimate by the
log's (where the log printed one); its band becomes the same-machine band of the fit (what a log
leaves unexplained about another start-up on its machine). It holds for the machine and release
it came from; another GPU or release is the caller's to warn about.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from hkv.planner.budget.budget_constants import SHIPPED, BudgetConstants
from hkv.planner.budget.fitted.fit import residual
from hkv.planner.budget.fitted.observation import BudgetObservation
from hkv.planner.errors import InvalidInputError

GIB = 2**30
FORMAT = "hkv-calibration/1"


@dataclass(frozen=True)
class Calibration:
    log: str  # the log it came from (a file name, for people)
    model: str
    gpu: str | None  # the GPU table key of the log's device (None: a custom total)
    vllm_version: str  # the release whose rules the log followed
    residual_bytes: int  # signed: what this setup took beyond the shipped constants
    graph_scale: float  # logged graph estimate / hkv's (1.0 where the log printed none)

    def apply(self, constants: BudgetConstants = SHIPPED) -> BudgetConstants:
        note = (f"calibrated on {self.log} ({self.model}, {self.gpu or 'custom GPU'}, vLLM {self.vllm_version}): "
                f"overhead {self.residual_bytes / GIB:+.2f} GiB, graphs x{self.graph_scale:.2f}")
        return replace(constants, calibration_offset_bytes=self.residual_bytes, calibration_graph_scale=self.graph_scale,
                       calibration_note=note)

    def mismatch(self, gpu: str | None, vllm_version: str) -> str | None:
        """What differs between this calibration's setup and a plan's; None when they match."""
        differs = []
        if gpu != self.gpu:
            differs.append(f"GPU {gpu or 'custom'} (calibrated on {self.gpu or 'custom'})")
        if vllm_version != self.vllm_version:
            differs.append(f"vLLM {vllm_version} (calibrated on {self.vllm_version})")
        return "; ".join(differs) or None

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **asdict(self)}, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str = "calibration file") -> Calibration:
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as err:
            raise InvalidInputError(f"{where} is not JSON ({err.msg} at line {err.lineno}); write it with "
                                    "`hkv calibrate LOG --out FILE`", fields=("calibration",)) from err
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InvalidInputError(f"{where} is not an hkv calibration (no \"format\": \"{FORMAT}\"); write it with "
                                    "`hkv calibrate LOG --out FILE`", fields=("calibration",))
        try:
            return cls(str(data["log"]), str(data["model"]), data["gpu"], str(data["vllm_version"]),
                       int(data["residual_bytes"]), float(data["graph_scale"]))
        except (KeyError, TypeError, ValueError) as err:
            raise InvalidInputError(f"{where} lacks a valid {err}; write it again with `hkv calibrate LOG --out FILE`",
                                    fields=("calibration",)) from err


def calibrate(observation: BudgetObservation, *, log: str, model: str, gpu: str | None, vllm_version: str,
              constants: BudgetConstants = SHIPPED) -> Calibration:
    """The calibration one observation gives; InvalidInputError when its log printed no available
    KV memory (nothing to calibrate on)."""
    if observation.overhead_bytes is None:
        raise InvalidInputError(f"{log} prints no \"Available KV cache memory\" line: calibration needs the start-up's "
                                "budget (paste the whole start-up log)", fields=("log_file",))
    scale = 1.0
    if observation.graph is not None and observation.graph_subtracted and observation.logged_graph_bytes:
        predicted = observation.graph.bytes_with(constants)
        if predicted > 0 and observation.logged_graph_bytes > 0:
            scale = observation.logged_graph_bytes / predicted
    scaled = replace(constants, calibration_graph_scale=scale)
    return Calibration(log, model, gpu, vllm_version, residual(observation, scaled), round(scale, 4))
