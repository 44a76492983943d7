"""What every quantization format shares: the per-rank context and the unquantized fallback."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Protocol

from hkv.model_specs.param_breakdown import LinearWeight


@dataclass(frozen=True)
class QuantContext:
    dtype_bytes: int  # the model dtype (what unquantized weights, biases and scales in "model dtype" take)
    compute_capability: tuple[int, int] | None  # None: unknown GPU (formats take their most common path)


class QuantFormat(Protocol):
    method: str  # vLLM's quant_method name

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        """Bytes of `weight.count` matrices of (in_features -> out_features) on one rank, bias included."""
        ...


def dense_linear_bytes(weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext) -> int:
    """An unquantized linear: weight and bias in the model dtype."""
    per_matrix = in_features * out_features + (out_features if weight.bias else 0)
    return weight.count * per_matrix * ctx.dtype_bytes


def stays_dense(weight: LinearWeight, lm_head_quantized: bool = False) -> bool:
    """vLLM quantizes lm_head only where the format says so (GPTQ / AWQ `lm_head: true`, ModelOpt
    unless excluded); every other format gives ParallelLMHead the unquantized method."""
    return weight.role == "lm_head" and not lm_head_quantized


def bias_bytes(weight: LinearWeight, out_features: int, ctx: QuantContext) -> int:
    """A quantized linear keeps its bias in the model dtype."""
    return weight.count * out_features * ctx.dtype_bytes if weight.bias else 0


def groups(in_features: int, group_size: int) -> int:
    """Scale groups along the input dimension; group_size <= 0 means one group per output channel."""
    return 1 if group_size <= 0 else ceil(in_features / group_size)


@dataclass(frozen=True)
class Unquantized:
    method: str = "none"

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        return dense_linear_bytes(weight, in_features, out_features, ctx)
