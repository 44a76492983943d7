"""FP8 checkpoints and vLLM's online FP8 (vLLM `fp8`).

Block FP8 (`weight_block_size` [bn, bk], DeepSeek-V3 / Qwen FP8 releases): K x N fp8 values plus
one fp32 `weight_scale_inv` per bn x bk block, ceil(N / bn) x ceil(K / bk) x 4 bytes.
Per-tensor FP8 (a serialized per-tensor checkpoint, or a bf16 checkpoint quantized at load with
`--quantization fp8`): K x N bytes + one fp32 scale (+ one input scale when static).
`modules_to_not_convert` / `ignored_layers` (substrings) stay in the model dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.base import QuantContext, bias_bytes, dense_linear_bytes, stays_dense
from hkv.planner.budget.quantization.compressed_tensors import FP32, fp8_bytes
from hkv.planner.budget.quantization.skip_rules import substring_match


@dataclass(frozen=True)
class Fp8:
    block: tuple[int, int] | None = None
    static_input: bool = False
    skip: tuple[str, ...] = ()
    method: str = "fp8"
    scale_bytes: int = FP32  # per weight scale; DeepSeek-V4 with fp4 experts keeps e8m0 (1 byte)

    @classmethod
    def from_config(cls, q: Mapping[str, Any]) -> Fp8:
        block = q.get("weight_block_size")
        skip = tuple(q.get("modules_to_not_convert") or ()) + tuple(q.get("ignored_layers") or ())
        return cls(
            (int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 else None,
            str(q.get("activation_scheme", "dynamic")) == "static",
            skip,
        )

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        if stays_dense(weight) or substring_match(weight.module, self.skip):
            return dense_linear_bytes(weight, in_features, out_features, ctx)
        strategy = "block" if self.block else "tensor"
        per_matrix = fp8_bytes(in_features, out_features, strategy, self.block, self.scale_bytes) + (
            FP32 if self.static_input else 0
        )
        return weight.count * per_matrix + bias_bytes(weight, out_features, ctx)


ONLINE_FP8 = Fp8(method="fp8 (online)")  # --quantization fp8 on an unquantized checkpoint: per-tensor
