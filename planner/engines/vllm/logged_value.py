"""LoggedValue: a figure vLLM printed, or one derived from printed figures, with the interval its
rounding leaves open (a difference of two figures printed to 0.01 GiB is known to +-0.01 GiB)."""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.logged_figure import LoggedFigure


@dataclass(frozen=True)
class LoggedValue:
    bytes: int
    low_bytes: int
    high_bytes: int
    text: str  # what was printed, or how it was derived: "consumed 15.26 - weights 15.0"

    @classmethod
    def printed(cls, figure: LoggedFigure, unit_text: str = " GiB") -> LoggedValue:
        low, high = figure.interval
        return cls(figure.bytes, low, high, figure.text + (unit_text if figure.unit == "GiB" else " B"))

    @classmethod
    def difference(cls, minuend: tuple[str, LoggedFigure], subtrahend: tuple[str, LoggedFigure]) -> LoggedValue:
        (a_name, a), (b_name, b) = minuend, subtrahend
        slack = a.half_unit_bytes + b.half_unit_bytes
        value = a.bytes - b.bytes
        return cls(value, value - slack, value + slack, f"{a_name} {a.text} - {b_name} {b.text}")

    def overlaps(self, low: int, high: int) -> bool:
        """Whether some value this figure may stand for lies in [low, high]."""
        return self.low_bytes <= high and low <= self.high_bytes
