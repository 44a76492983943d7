"""Parse and format memory sizes: "80GiB", "512MiB", "1.5GB", "123456" (bytes)."""

from __future__ import annotations

import re

from hkv.planner.errors import InvalidInputError

_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,  # bare letters: binary, like `free -h`
}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str, *, option: str = "SIZE") -> int:
    """Bytes for a size string; raises InvalidInputError naming `option` on anything else."""
    match = _SIZE_RE.match(text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise InvalidInputError(
            f"{option} must be a size like 80GiB, 512MiB, 1.5GB or a byte count, got {text!r}"
        )
    value = float(match.group(1)) * _UNITS[unit]
    if value <= 0:
        raise InvalidInputError(f"{option} must be positive, got {text!r}")
    return int(value)


def format_gib(num_bytes: float) -> str:
    return f"{num_bytes / 2**30:.2f} GiB"


def format_bytes(num_bytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(num_bytes) >= scale:
            return f"{num_bytes / scale:.2f} {unit}"
    return f"{int(num_bytes)} B"
