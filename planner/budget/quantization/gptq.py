"""GPTQ (AutoGPTQ / GPTQModel checkpoints; vLLM `gptq`, or `gptq_marlin` on compute capability >= 8.0).

Per linear of K inputs, N outputs, `bits` b, `group_size` g (-1: one group; G = K / g):
    qweight  int32 [K x b / 32, N]   K x N x b / 8 bytes
    scales   fp16  [G, N]            G x N x 2 bytes
    qzeros   int32 [G, N x b / 32]   G x N x b / 8 bytes; gptq_marlin drops them when `sym`
    g_idx    int32 [K]               K x 4 bytes; gptq_marlin keeps it (and int32 sort indices,
                                     another K x 4) only with `desc_act` (act-order)
`dynamic` keys "-:<regex>" leave matching modules unquantized, "+:<regex>" override bits/group_size;
`modules_in_block_to_quantize` (when given) lists the only decoder-block modules quantized.
`--quantization gptq` on a GPTQ checkpoint forces the plain (exllama) kernel on any GPU (vLLM's
gptq_marlin override_quantization_method takes over only when the user named no method or a
Marlin one): zero points kept, one int32 g_idx (argsort of the act-order indices) per matrix.
"""

from __future__ import annotations

import re
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

SCALE_BYTES = 2
INDEX_BYTES = 4
MARLIN_MIN_CAPABILITY = (8, 0)


def packed_int_bytes(
    in_features: int,
    out_features: int,
    *,
    bits: int,
    group_size: int,
    zeros: bool,
    act_order_indices: int,
    scale_bytes: int = SCALE_BYTES,
) -> int:
    """One matrix: packed weights + scales (+ packed zero points) + `act_order_indices` int32 vectors of K."""
    g = groups(in_features, group_size)
    return (
        in_features * out_features * bits // 8
        + g * out_features * scale_bytes
        + (g * out_features * bits // 8 if zeros else 0)
        + act_order_indices * in_features * INDEX_BYTES
    )


@dataclass(frozen=True)
class Gptq:
    bits: int = 4
    group_size: int = 128
    desc_act: bool = False
    sym: bool = True
    skip_patterns: tuple[str, ...] = ()
    overrides: tuple[tuple[str, int, int], ...] = ()  # (regex, bits, group_size)
    in_block: tuple[str, ...] = ()  # modules_in_block_to_quantize, flattened
    lm_head: bool = False  # the config's `lm_head`: lm_head quantized too
    method: str = "gptq"
    marlin: bool | None = None  # None: Marlin wherever the GPU supports it; False: --quantization gptq

    @classmethod
    def from_config(cls, q: Mapping[str, Any]) -> Gptq:
        bits, group = int(q.get("bits", 4)), int(q.get("group_size", 128))
        dynamic = q.get("dynamic") or {}
        skips = tuple(k[2:] for k in dynamic if str(k).startswith("-:"))
        overrides = tuple(
            (
                k[2:] if str(k).startswith("+:") else k,
                int(v.get("bits", bits)),
                int(v.get("group_size", group)),
            )
            for k, v in dynamic.items()
            if not str(k).startswith("-:") and isinstance(v, Mapping)
        )
        blocks = q.get("modules_in_block_to_quantize") or ()
        flat = tuple(m for b in blocks for m in (b if isinstance(b, list) else [b]))
        return cls(
            bits,
            group,
            bool(q.get("desc_act", False)),
            bool(q.get("sym", True)),
            skips,
            overrides,
            flat,
            bool(q.get("lm_head", False)),
        )

    def _skipped(self, module: str) -> bool:
        if any(re.match(p, module) for p in self.skip_patterns):
            return True
        if module.endswith("lm_head"):
            return False
        return bool(self.in_block) and ".layers." in module and not any(m in module for m in self.in_block)

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        if stays_dense(weight, self.lm_head) or self._skipped(weight.module):
            return dense_linear_bytes(weight, in_features, out_features, ctx)
        bits, group = next(
            ((b, g) for p, b, g in self.overrides if re.match(p, weight.module)), (self.bits, self.group_size)
        )
        marlin = self.marlin is not False and (
            ctx.compute_capability is None or ctx.compute_capability >= MARLIN_MIN_CAPABILITY
        )
        indices = (2 if self.desc_act else 0) if marlin else 1
        per_matrix = packed_int_bytes(
            in_features,
            out_features,
            bits=bits,
            group_size=group,
            zeros=not (marlin and self.sym),
            act_order_indices=indices,
        )
        return weight.count * per_matrix + bias_bytes(weight, out_features, ctx)
