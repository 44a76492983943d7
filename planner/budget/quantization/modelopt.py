"""NVIDIA ModelOpt checkpoints (vLLM `modelopt`, `modelopt_fp4`, `modelopt_mixed`).

`quant_algo` FP8: per-tensor FP8, K x N bytes + fp32 weight and input scales. NVFP4: 4-bit values
in groups of 16 with fp8 scales (compressed_tensors.nvfp4_bytes). MIXED_PRECISION: each module's
algorithm from `quantized_layers`. `exclude_modules` (shell wildcards) stay in the model dtype;
vLLM quantizes lm_head too unless it is excluded (or, mixed, not listed).
The config is either flat or nested under "quantization" (hf_quant_config.json's layout).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.base import QuantContext, bias_bytes, dense_linear_bytes
from hkv.planner.budget.quantization.compressed_tensors import FP32, fp8_bytes, nvfp4_bytes
from hkv.planner.budget.quantization.skip_rules import wildcard_match


def _algo_bytes(algo: str, k: int, n: int, group: int, ctx: QuantContext) -> int | None:
    algo = algo.upper()
    if algo == "FP8":
        return fp8_bytes(k, n, "tensor") + FP32  # + the static input scale
    if "NVFP4" in algo or algo == "FP4":
        return nvfp4_bytes(k, n, ctx, group)
    return None


@dataclass(frozen=True)
class ModelOpt:
    algo: str
    group_size: int = 16
    exclude: tuple[str, ...] = ()
    per_layer: tuple[tuple[str, str], ...] = ()  # (module, algo) for MIXED_PRECISION
    method: str = "modelopt"

    @classmethod
    def from_config(cls, q: Mapping[str, Any]) -> ModelOpt:
        inner = q.get("quantization") if isinstance(q.get("quantization"), Mapping) else q
        layers = inner.get("quantized_layers") or {}
        per_layer = tuple(
            (str(m), str(v.get("quant_algo", ""))) for m, v in layers.items() if isinstance(v, Mapping)
        )
        return cls(
            str(inner.get("quant_algo", "")),
            int(inner.get("group_size") or 16),
            tuple(inner.get("exclude_modules") or ()) + tuple(inner.get("ignore") or ()),
            per_layer,
        )

    def _algo_of(self, module: str) -> str | None:
        if self.per_layer:
            return next((a for m, a in self.per_layer if m == module or m.startswith(module + ".")), None)
        return self.algo

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        algo = None if wildcard_match(weight.module, self.exclude) else self._algo_of(weight.module)
        per_matrix = (
            None if algo is None else _algo_bytes(algo, in_features, out_features, self.group_size, ctx)
        )
        if per_matrix is None:
            return dense_linear_bytes(weight, in_features, out_features, ctx)
        return weight.count * per_matrix + bias_bytes(weight, out_features, ctx)
