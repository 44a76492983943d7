"""AWQ (AutoAWQ checkpoints; vLLM `awq`, repacked by `awq_marlin` on compute capability >= 8.0).

Per linear of K inputs and N outputs, `w_bit` b and `group_size` g (G = K / g groups):
    qweight  int32 [K, N x b / 32]   K x N x b / 8 bytes
    qzeros   int32 [G, N x b / 32]   G x N x b / 8 bytes   (zero_point; AWQ is asymmetric)
    scales   fp16  [G, N]            G x N x 2 bytes
Marlin's repack permutes these tensors without changing their sizes and keeps no g_idx (AWQ has
no act-order). Modules named (as substrings) in `modules_to_not_convert` stay in the model dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.base import (
    QuantContext,
    bias_bytes,
    dense_linear_bytes,
    groups,
    stays_dense,
)
from hkv.planner.budget.quantization.skip_rules import substring_match

SCALE_BYTES = 2  # fp16


@dataclass(frozen=True)
class Awq:
    bits: int = 4
    group_size: int = 128
    zero_point: bool = True
    skip: tuple[str, ...] = ()
    lm_head: bool = False  # the config's `lm_head`: lm_head quantized too
    method: str = "awq"

    @classmethod
    def from_config(cls, q: Mapping[str, Any]) -> Awq:
        return cls(
            bits=int(q.get("bits", q.get("w_bit", 4))),
            group_size=int(q.get("group_size", q.get("q_group_size", 128))),
            zero_point=bool(q.get("zero_point", True)),
            skip=tuple(q.get("modules_to_not_convert") or ()),
            lm_head=bool(q.get("lm_head", False)),
        )

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        if stays_dense(weight, self.lm_head) or substring_match(weight.module, self.skip):
            return dense_linear_bytes(weight, in_features, out_features, ctx)
        g = groups(in_features, self.group_size)
        packed = in_features * out_features * self.bits // 8
        zeros = g * out_features * self.bits // 8 if self.zero_point else 0
        return weight.count * (packed + zeros + g * out_features * SCALE_BYTES) + bias_bytes(
            weight, out_features, ctx
        )
