"""bitsandbytes (vLLM `bitsandbytes`: pre-quantized checkpoints, or in-flight from bf16).

4-bit (nf4 / fp4), blocks of 64 values: K x N / 2 bytes of packed values, plus the absmax of each
block: fp32 (K x N / 64 x 4 bytes), or, with double quantization (`bnb_4bit_use_double_quant`,
and always for vLLM's in-flight quantization, which passes compress_statistics=True), uint8
absmax (K x N / 64) with one fp32 second-level absmax per 256 blocks.
8-bit (LLM.int8): K x N int8 + one fp32 scale (SCB) per output row.
`llm_int8_skip_modules` (substrings) stay in the model dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import ceil
from typing import Any

from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.base import QuantContext, bias_bytes, dense_linear_bytes, stays_dense
from hkv.planner.budget.quantization.skip_rules import substring_match

BLOCK = 64
NESTED_BLOCK = 256
FP32 = 4


def four_bit_bytes(numel: int, double_quant: bool) -> int:
    blocks = ceil(numel / BLOCK)
    absmax = blocks + ceil(blocks / NESTED_BLOCK) * FP32 if double_quant else blocks * FP32
    return numel // 2 + absmax


@dataclass(frozen=True)
class BitsAndBytes:
    four_bit: bool = True
    double_quant: bool = True
    skip: tuple[str, ...] = ()
    method: str = "bitsandbytes"

    @classmethod
    def from_config(cls, q: Mapping[str, Any]) -> BitsAndBytes:
        return cls(
            not bool(q.get("load_in_8bit", False)),
            bool(q.get("bnb_4bit_use_double_quant", False)),
            tuple(q.get("llm_int8_skip_modules") or ()),
        )

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        if stays_dense(weight) or substring_match(weight.module, self.skip):
            return dense_linear_bytes(weight, in_features, out_features, ctx)
        numel = in_features * out_features
        per_matrix = (
            four_bit_bytes(numel, self.double_quant) if self.four_bit else numel + out_features * FP32
        )
        return weight.count * per_matrix + bias_bytes(weight, out_features, ctx)


IN_FLIGHT_BNB = BitsAndBytes(method="bitsandbytes (in-flight)")  # nf4 with compressed statistics
