"""How to read a trace file: its format, its block size, the part replayed, the length limit."""

from __future__ import annotations

from dataclasses import dataclass, field

from hkv.runtime.simulation.traces.mooncake_reader import MOONCAKE_BLOCK_SIZE
from hkv.runtime.simulation.traces.trace_window import TraceWindow


@dataclass(frozen=True)
class TraceOptions:
    """`format`: a name of TRACE_FORMAT_NAMES, or None to tell it by content. `block_size`: tokens
    per Mooncake hash id. `max_model_len`: longer requests are skipped and counted (None: none)."""

    format: str | None = None
    block_size: int = MOONCAKE_BLOCK_SIZE
    window: TraceWindow = field(default_factory=TraceWindow)
    max_model_len: int | None = None

    def __post_init__(self) -> None:
        assert self.block_size >= 1 and (self.max_model_len is None or self.max_model_len >= 1), self
