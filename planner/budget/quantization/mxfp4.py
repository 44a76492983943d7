"""MXFP4 MoE experts (gpt-oss; vLLM `mxfp4`): 4-bit values with one uint8 (e8m0) scale per 32.

Only the routed experts are MXFP4; vLLM's Mxfp4Config gives every other linear (attention) the
unquantized method. Per expert matrix of K inputs and N outputs: K x N / 2 value bytes + K x N / 32
scale bytes, after the kernel backend pads the MoE dimensions (vLLM quantization/mxfp4.py,
`maybe_roundup_sizes` / `mxfp4_round_up_hidden_size_and_intermediate_size`; intermediate is the
per-rank size). The backend follows the GPU generation (vLLM's default selection, no env flags):
  compute capability < 9.0 and consumer Blackwell 12.x: Marlin, hidden -> multiple of 256,
      intermediate -> multiple of 128 (gpt-oss-120b: 2880 -> 3072 and 2944);
  9.0 (Hopper): Triton matmul_ogs, intermediate -> multiple of 64; its Hopper value layout
      (triton_kernels hopper_value.py `_padded_shape`) then pads each expert's packed input axis
      to 64 bytes (128 values) and its output axis to 256, its scale layout (hopper_scale.py)
      pads the scales' output axis to 256 and their block axis to even; biases are kept in fp32;
  10.x (datacenter Blackwell): FlashInfer TRT-LLM, hidden -> 256, intermediate -> 128.
Unknown GPU: no padding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import ceil
from typing import Any

from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.base import QuantContext, dense_linear_bytes

BLOCK = 32
FP32 = 4
EXPERT_ROLES = ("experts_w13", "experts_w2")


def _up(x: int, multiple: int) -> int:
    return ceil(x / multiple) * multiple


@dataclass(frozen=True)
class Backend:
    name: str
    hidden_multiple: int
    intermediate_multiple: int
    value_in_multiple: int = 1  # layout padding of each stored matrix (Hopper Triton)
    value_out_multiple: int = 1
    scale_out_multiple: int = 1  # layout padding of each scale matrix's output axis (Hopper Triton)
    fp32_bias: bool = False


MARLIN = Backend("marlin", 256, 128)
TRITON_HOPPER = Backend(
    "triton (hopper layout)",
    1,
    64,
    value_in_multiple=128,
    value_out_multiple=256,
    scale_out_multiple=256,
    fp32_bias=True,
)
TRTLLM = Backend("flashinfer trtllm", 256, 128)
UNPADDED = Backend("unknown GPU: unpadded", 1, 1)


def backend_for(capability: tuple[int, int] | None) -> Backend:
    if capability is None:
        return UNPADDED
    if capability[0] == 9:
        return TRITON_HOPPER
    if capability[0] == 10:
        return TRTLLM
    return MARLIN


@dataclass(frozen=True)
class Mxfp4:
    method: str = "mxfp4"

    @classmethod
    def from_config(cls, q: Mapping[str, Any]) -> Mxfp4:
        return cls()

    def padded_shape(
        self, weight: LinearWeight, in_features: int, out_features: int, backend: Backend
    ) -> tuple[int, int]:
        """(in, out) of one expert matrix after the backend's MoE padding (w13 out = 2 x intermediate)."""
        if weight.role == "experts_w13":
            return _up(in_features, backend.hidden_multiple), 2 * _up(
                out_features // 2, backend.intermediate_multiple
            )
        return _up(in_features, backend.intermediate_multiple), _up(out_features, backend.hidden_multiple)

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        if weight.role not in EXPERT_ROLES:
            return dense_linear_bytes(weight, in_features, out_features, ctx)
        return self.expert_bytes(weight, in_features, out_features, ctx, backend_for(ctx.compute_capability))

    def expert_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext, backend: Backend
    ) -> int:
        """One layer's MXFP4 expert stack (w13 or w2) on one rank, as `backend` pads and lays it out."""
        k, n = self.padded_shape(weight, in_features, out_features, backend)
        values = _up(k, backend.value_in_multiple) * _up(n, backend.value_out_multiple) // 2
        scales = _up(ceil(k / BLOCK), 2 if backend.scale_out_multiple > 1 else 1) * _up(
            n, backend.scale_out_multiple
        )
        bias = n * (FP32 if backend.fp32_bias else ctx.dtype_bytes) if weight.bias else 0
        return weight.count * (values + scales + bias)
