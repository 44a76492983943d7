"""compressed-tensors (llm-compressor checkpoints; vLLM `compressed-tensors`).

`config_groups` name schemes; a linear takes the first group whose `targets` match it ("Linear",
a module-name suffix, or "re:<regex>"), unless `ignore` names it. Per linear of K inputs and N
outputs, by the group's weights scheme:
  int, pack-quantized (W4A16 / W8A16):  weight_packed int32  K x N x b / 8
        + weight_scale (model dtype) G x N x 2 (group strategy; channel: G = 1)
        + weight_zero_point G x N x b / 8 when asymmetric, + weight_shape (2 x int64)
        + with actorder, weight_g_idx and Marlin's sort indices (2 x K x int32)
  int 8, int-quantized (W8A8):          K x N int8 + N x fp32 channel scales
  float 8 (FP8 W8A8):                   K x N fp8 + fp32 scales: N (channel), 1 (tensor) or
                                        ceil(N / bn) x ceil(K / bk) (block)
  float 4, group 16 (NVFP4):            K x N / 2 + fp8 scales N x K / 16 (+ fp32 global scales);
                                        on native-FP4 GPUs (10.0, 10.3, 12.0) scales are swizzled to
                                        (N rounded up to 128) x (K / 16 rounded up to 4)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from math import ceil
from typing import Any

from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.base import QuantContext, bias_bytes, dense_linear_bytes, stays_dense
from hkv.planner.budget.quantization.gptq import packed_int_bytes
from hkv.planner.budget.quantization.skip_rules import ignore_match

FP32 = 4
NVFP4_GROUP = 16
SWIZZLE_ROWS, SWIZZLE_COLS = 128, 4
# GPUs whose native FP4 GEMMs take swizzled scales; elsewhere (GB10 in the logged releases: "Your GPU
# does not have native support for FP4") vLLM runs NVFP4 weight-only on Marlin with plain scales.
NATIVE_FP4_CAPABILITIES = ((10, 0), (10, 3), (12, 0))


def _round_up(x: int, multiple: int) -> int:
    return ceil(x / multiple) * multiple


def nvfp4_bytes(in_features: int, out_features: int, ctx: QuantContext, group: int = NVFP4_GROUP) -> int:
    """One NVFP4 matrix: 4-bit values, one fp8 scale per `group` inputs, two fp32 global scales."""
    scale_cols = ceil(in_features / group)
    rows = out_features
    if ctx.compute_capability in NATIVE_FP4_CAPABILITIES:
        rows, scale_cols = _round_up(rows, SWIZZLE_ROWS), _round_up(scale_cols, SWIZZLE_COLS)
    return in_features * out_features // 2 + rows * scale_cols + 2 * FP32


def fp8_bytes(
    in_features: int,
    out_features: int,
    strategy: str,
    block: tuple[int, int] | None = None,
    scale_bytes: int = FP32,
) -> int:
    """One FP8 matrix: a byte per value + scales by strategy (channel, tensor, block), fp32 unless
    `scale_bytes` says otherwise (DeepSeek-V4's ue8m0 block scales: 1)."""
    if strategy == "channel":
        scales = out_features
    elif strategy == "block" and block is not None:
        scales = ceil(out_features / block[0]) * ceil(in_features / block[1])
    else:
        scales = 1
    return in_features * out_features + scales * scale_bytes


@dataclass(frozen=True)
class Scheme:
    targets: tuple[str, ...]
    kind: str  # "int" | "float"
    bits: int
    strategy: str  # "channel" | "group" | "tensor" | "block" | "tensor_group"
    group_size: int
    symmetric: bool
    act_order: bool
    block: tuple[int, int] | None
    packed: bool  # pack-quantized (int weights packed in int32)

    def matches(self, module: str) -> bool:
        for t in self.targets:
            if t == "Linear" or (t.startswith("re:") and re.match(t[3:], module)) or module.endswith("." + t):
                return True
        return False

    def matrix_bytes(self, k: int, n: int, ctx: QuantContext) -> int:
        if self.kind == "float" and self.bits == 4:
            return nvfp4_bytes(k, n, ctx, self.group_size or NVFP4_GROUP)
        if self.kind == "float":
            return fp8_bytes(k, n, self.strategy, self.block)
        if self.packed or self.bits < 8:
            group = self.group_size if self.strategy == "group" else 0
            return (
                packed_int_bytes(
                    k,
                    n,
                    bits=self.bits,
                    group_size=group,
                    zeros=not self.symmetric,
                    act_order_indices=2 if self.act_order else 0,
                    scale_bytes=ctx.dtype_bytes,
                )
                + 16
            )
        return k * n + n * FP32  # int8 W8A8, channel scales


def _scheme(group: Mapping[str, Any], fmt: str) -> Scheme:
    w = group.get("weights") or {}
    block = w.get("block_structure")
    return Scheme(
        targets=tuple(group.get("targets") or ("Linear",)),
        kind=str(w.get("type", "int")),
        bits=int(w.get("num_bits", 8)),
        strategy=str(w.get("strategy", "tensor")),
        group_size=int(w.get("group_size") or 0),
        symmetric=bool(w.get("symmetric", True)),
        act_order=str(w.get("actorder") or "").lower() in ("group", "weight"),
        block=(int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 else None,
        packed="pack" in str(group.get("format") or fmt),
    )


@dataclass(frozen=True)
class CompressedTensors:
    schemes: tuple[Scheme, ...]
    ignore: tuple[str, ...] = ()
    method: str = "compressed-tensors"

    @classmethod
    def from_config(cls, q: Mapping[str, Any]) -> CompressedTensors:
        fmt = str(q.get("format", ""))
        groups_cfg = q.get("config_groups") or {}
        return cls(
            tuple(_scheme(g, fmt) for g in groups_cfg.values() if isinstance(g, Mapping)),
            tuple(q.get("ignore") or ()),
        )

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        scheme = (
            None
            if stays_dense(weight) or ignore_match(weight.module, self.ignore)
            else next((s for s in self.schemes if s.matches(weight.module)), None)
        )
        if scheme is None:
            return dense_linear_bytes(weight, in_features, out_features, ctx)
        return weight.count * scheme.matrix_bytes(in_features, out_features, ctx) + bias_bytes(
            weight, out_features, ctx
        )
