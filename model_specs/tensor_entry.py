"""One tensor of a checkpoint as its safetensors header describes it (no data)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TensorEntry:
    """`nbytes`: numel x element size, or the stored byte span for sub-byte dtypes (F4, ...)."""

    name: str  # e.g. "model.layers.0.self_attn.q_proj.qweight"
    dtype: str  # the safetensors code: "BF16", "I32", "F8_E4M3", ...
    shape: tuple[int, ...]
    nbytes: int
