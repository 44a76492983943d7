"""LogCheck: one figure a start-up log printed next to hkv's reproduction of it (any engine)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LogCheck:
    name: str
    logged: str
    reproduced: str
    ok: bool
