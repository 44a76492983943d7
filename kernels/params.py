"""Frozen bundle of per-layer attention options shared by every paged-attention implementation."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class AttentionParams:
    """Options of one attention layer, fixed for the life of a model.

    scale          multiplier of q.k before any cap or mask (usually head_dim ** -0.5).
    sliding_window W: key position k is visible from query position q iff q - W < k <= q
                   (transformers' `sliding_window_overlay` on top of the causal mask).
    chunk_size     C (Llama 4 chunked-local): visible iff k // C == q // C and k <= q.
    softcap        Gemma 2 logit cap: s = softcap * tanh(s / softcap), applied after `scale`.

    `None` disables an option. Window and chunk may both be set; a key must then pass both.
    """

    scale: float
    sliding_window: int | None = None
    chunk_size: int | None = None
    softcap: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"AttentionParams.scale must be a finite number > 0, got {self.scale!r}")
        for name in ("sliding_window", "chunk_size"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"AttentionParams.{name} must be None or an int >= 1, got {value!r}")
        if self.softcap is not None and not (math.isfinite(self.softcap) and self.softcap > 0):
            raise ValueError(
                f"AttentionParams.softcap must be None or a finite number > 0, got {self.softcap!r}"
            )

    def first_visible_key(self, query_pos: int) -> int:
        """Smallest key position visible from absolute position `query_pos` (0 when unbounded).

        Later queries never see further back, so for a run of queries starting at `query_pos`
        every key before this position (and every page wholly before it) can be skipped.
        """
        first = 0
        if self.sliding_window is not None:
            first = max(first, query_pos - self.sliding_window + 1)
        if self.chunk_size is not None:
            first = max(first, (query_pos // self.chunk_size) * self.chunk_size)
        return first
