"""LoggedFigure: one number an engine printed, kept as printed so the interval its rounding leaves
open stays known (vLLM's 44.59 GiB is any value in [44.585, 44.595) GiB; SGLang prints GB to two
decimals the same way)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

GIB = 2**30


@dataclass(frozen=True)
class LoggedFigure:
    """One printed number: `text` as printed, in `unit` ("GiB" or "bytes")."""

    text: str
    unit: Literal["GiB", "bytes"] = "GiB"

    @property
    def bytes(self) -> int:
        value = Decimal(self.text)
        return int(value if self.unit == "bytes" else value * GIB)

    @property
    def half_unit_bytes(self) -> int:
        """Half of the last printed digit, in bytes: how far the printed value may be from the real one."""
        if self.unit == "bytes":
            return 0
        decimals = max(0, -Decimal(self.text).as_tuple().exponent)
        return int(Decimal(GIB) / 2 / Decimal(10) ** decimals)

    @property
    def interval(self) -> tuple[int, int]:
        return self.bytes - self.half_unit_bytes, self.bytes + self.half_unit_bytes
