"""Synthetic workloads from a one-line spec: `KIND:key=value,...`.

    fixed:n=1000,prompt=2048,output=256
    uniform:n=1000,prompt=512-4096,output=64-512
    lognormal:n=1000,prompt=1024,output=128,sigma=0.8        (prompt/output are medians)
    shared-prefix:n=1000,prefix=2048,prompt=256,output=128,prefixes=4
    sessions:sessions=50,turns=8,prompt=256,output=128        (each turn resends the conversation)
Common keys: rate=R (Poisson arrivals, requests/s; default: all at once), seed=S (default 0).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from hkv.planner.errors import InvalidInputError

KINDS = ("fixed", "uniform", "lognormal", "shared-prefix", "sessions")
_KEYS = {
    "fixed": {"n", "prompt", "output"},
    "uniform": {"n", "prompt", "output"},
    "lognormal": {"n", "prompt", "output", "sigma"},
    "shared-prefix": {"n", "prefix", "prompt", "output", "prefixes"},
    "sessions": {"sessions", "turns", "prompt", "output"},
}
_COMMON = {"rate", "seed"}
_FIELDS = ("workload",)  # the option every message here is about (see InputError.fields)
_DEFAULTS = {"n": "100", "prompt": "1024", "output": "128", "sigma": "0.8", "prefix": "1024",
             "prefixes": "1", "sessions": "10", "turns": "4", "seed": "0"}


@dataclass(frozen=True)
class LengthRange:
    min_len: int
    max_len: int


@dataclass(frozen=True)
class WorkloadSpec:
    kind: str
    params: tuple[tuple[str, str], ...]  # raw key=value pairs, validated

    def get(self, key: str) -> str:
        return dict(self.params).get(key, _DEFAULTS.get(key, ""))

    def count(self, key: str) -> int:
        return _positive_int(self.get(key), key)

    def length_range(self, key: str) -> LengthRange:
        text = self.get(key)
        if "-" in text:
            lo, hi = text.split("-", 1)
            rng = LengthRange(_positive_int(lo, key), _positive_int(hi, key))
            if rng.min_len > rng.max_len:
                raise InvalidInputError(f"workload {key}={text}: the range must be MIN-MAX with MIN <= MAX",
                                        fields=_FIELDS)
            return rng
        n = _positive_int(text, key)
        return LengthRange(n, n)

    def positive_float(self, key: str) -> float | None:
        text = self.get(key)
        if text == "":
            return None
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise InvalidInputError(f"workload {key} must be a positive number, got {text!r}",
                                    fields=_FIELDS)
        return value


def parse_workload(text: str) -> WorkloadSpec:
    """Raises InvalidInputError with the offending part and the accepted forms."""
    kind, _, rest = text.strip().partition(":")
    if kind not in KINDS:
        close = difflib.get_close_matches(kind, KINDS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise InvalidInputError(f"workload kind {kind!r} is unknown{hint}; use one of {', '.join(KINDS)}",
                                fields=_FIELDS)
    pairs = []
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in _KEYS[kind] | _COMMON:
            allowed = ", ".join(sorted(_KEYS[kind] | _COMMON))
            raise InvalidInputError(f"workload {kind}: bad part {item!r}; keys are {allowed} (key=value)",
                                    fields=_FIELDS)
        pairs.append((key, value))
    spec = WorkloadSpec(kind, tuple(pairs))
    for key in _KEYS[kind]:  # validate eagerly: nothing is simulated on bad input
        if key == "sigma":
            spec.positive_float(key)
        elif key in ("prompt", "output"):
            spec.length_range(key)
        else:
            spec.count(key)
    spec.positive_float("rate")
    if spec.get("seed") and not spec.get("seed").isdigit():
        raise InvalidInputError(f"workload seed must be a non-negative integer, got {spec.get('seed')!r}",
                                fields=_FIELDS)
    return spec


def _positive_int(text: str, key: str) -> int:
    if not text.strip().isdigit() or int(text) <= 0:
        raise InvalidInputError(f"workload {key} must be a positive integer, got {text!r}", fields=_FIELDS)
    return int(text)
