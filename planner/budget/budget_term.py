"""One term of the KV budget (weights, activations, CUDA graphs, ...) with where it came from.

A term's `bytes` is hkv's best value; [low_bytes, high_bytes] is the band it may really take:
equal to `bytes` for a term that is known exactly (given by the user, read from a checkpoint's
safetensors headers), wider for one computed from a config or estimated from measured residuals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# given: the user said so; header: safetensors headers (exact); config: computed from the config's
# dimensions and quantization (exact up to what vLLM adds); estimate: a model of vLLM's profile run,
# its band the residuals measured on real start-up logs.
# log: the user's own start-up log (a calibration, budget/fitted/calibration.py).
TermSource = Literal["given", "header", "config", "estimate", "log"]


@dataclass(frozen=True)
class BudgetTerm:
    name: str  # "weights", "activation", "cudagraph", "non_torch", ...
    bytes: int
    source: TermSource
    low_bytes: int
    high_bytes: int
    note: str = ""  # what the term is made of, for people
    signed: bool = False  # a correction that may give memory back (a calibration's residual); else >= 0

    def __post_init__(self) -> None:
        assert self.low_bytes <= self.bytes <= self.high_bytes, (self.name, self.low_bytes, self.bytes, self.high_bytes)
        assert self.signed or self.low_bytes >= 0, (self.name, self.low_bytes)

    @classmethod
    def exact(cls, name: str, value: int, source: TermSource, note: str = "") -> BudgetTerm:
        return cls(name, value, source, value, value, note)

    @classmethod
    def banded(cls, name: str, value: int, source: TermSource, rel_low: float, rel_high: float,
               note: str = "") -> BudgetTerm:
        """`value` with a band of -rel_low / +rel_high of itself (fractions, >= 0)."""
        return Band(rel_low, rel_high).term(name, value, note, source)

    @property
    def is_exact(self) -> bool:
        return self.low_bytes == self.high_bytes


@dataclass(frozen=True)
class Band:
    """Where the real value may fall around hkv's `e`: [e x (1 - rel_low) - abs_low,
    e x (1 + rel_high) + abs_high]; the profile's bands come from the residuals on real logs."""

    rel_low: float
    rel_high: float
    abs_low: int = 0
    abs_high: int = 0

    def term(self, name: str, value: int, note: str, source: TermSource = "estimate") -> BudgetTerm:
        low = max(0, int(value * (1 - self.rel_low)) - self.abs_low)
        high = int(value * (1 + self.rel_high)) + self.abs_high
        return BudgetTerm(name, value, source, min(low, value), max(high, value), note)
