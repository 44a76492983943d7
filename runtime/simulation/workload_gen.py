"""Expand a WorkloadSpec into WorkloadRequests (deterministic for a seed).

Token ids only need to be equal where content is shared, so unique text is a fresh run of
consecutive ids (`array('q', range(...))`, built at C speed) and shared text reuses an array.
Arrays are int64, Request's storage type, so a Request copies its prompt with one memcpy.
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Callable

from hkv.runtime.simulation.workload_request import WorkloadRequest
from hkv.runtime.simulation.workload_spec import LengthRange, WorkloadSpec

_INT32_LIMIT = 2**31 - 1


class _TokenSource:
    """Hands out runs of ids never used before (wrapping far beyond any realistic trace)."""

    def __init__(self) -> None:
        self._next = 1

    def fresh(self, n: int) -> array:
        if self._next + n >= _INT32_LIMIT:
            self._next = 1
        run = array("q", range(self._next, self._next + n))
        self._next += n
        return run


def _arrivals(spec: WorkloadSpec, n: int, rng: random.Random) -> list[float]:
    rate = spec.positive_float("rate")
    if rate is None:
        return [0.0] * n
    t, out = 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate)
        out.append(t)
    return out


def _draw(rng: random.Random, r: LengthRange) -> int:
    return r.min_len if r.min_len == r.max_len else rng.randint(r.min_len, r.max_len)


def _lognormal(rng: random.Random, median: int, sigma: float) -> int:
    return max(1, round(median * math.exp(rng.gauss(0.0, sigma))))


def _independent(spec: WorkloadSpec, rng: random.Random, tokens: _TokenSource,
                 lengths: Callable[[], tuple[int, int]]) -> list[WorkloadRequest]:
    n = spec.count("n")
    out = []
    for i, arrival in enumerate(_arrivals(spec, n, rng)):
        prompt_len, output_len = lengths()
        out.append(WorkloadRequest(f"req-{i}", arrival, tokens.fresh(prompt_len), tokens.fresh(output_len)))
    return out


def _fixed(spec: WorkloadSpec, rng: random.Random, tokens: _TokenSource) -> list[WorkloadRequest]:
    prompt, output = spec.length_range("prompt"), spec.length_range("output")
    return _independent(spec, rng, tokens, lambda: (_draw(rng, prompt), _draw(rng, output)))


def _lognormal_kind(spec: WorkloadSpec, rng: random.Random, tokens: _TokenSource) -> list[WorkloadRequest]:
    prompt, output = spec.length_range("prompt").min_len, spec.length_range("output").min_len
    sigma = spec.positive_float("sigma") or 0.8
    return _independent(spec, rng, tokens,
                        lambda: (_lognormal(rng, prompt, sigma), _lognormal(rng, output, sigma)))


def _shared_prefix(spec: WorkloadSpec, rng: random.Random, tokens: _TokenSource) -> list[WorkloadRequest]:
    prefix_len = spec.length_range("prefix").min_len
    prefixes = [tokens.fresh(prefix_len) for _ in range(spec.count("prefixes"))]
    prompt, output = spec.length_range("prompt"), spec.length_range("output")
    out = []
    for i, arrival in enumerate(_arrivals(spec, spec.count("n"), rng)):
        prefix = prefixes[i % len(prefixes)]
        out.append(WorkloadRequest(f"req-{i}", arrival, prefix + tokens.fresh(_draw(rng, prompt)),
                                   tokens.fresh(_draw(rng, output))))
    return out


def _sessions(spec: WorkloadSpec, rng: random.Random, tokens: _TokenSource) -> list[WorkloadRequest]:
    """Round-robin turns: s0t0, s1t0, ..., s0t1, ...; turn t resends turn t-1's prompt and output."""
    num_sessions, turns = spec.count("sessions"), spec.count("turns")
    prompt, output = spec.length_range("prompt"), spec.length_range("output")
    arrivals = _arrivals(spec, num_sessions * turns, rng)
    history: list[array] = [array("q") for _ in range(num_sessions)]
    last_index: list[int | None] = [None] * num_sessions
    out = []
    for turn in range(turns):
        for s in range(num_sessions):
            i = len(out)
            prompt_ids = history[s] + tokens.fresh(_draw(rng, prompt))
            output_ids = tokens.fresh(_draw(rng, output))
            out.append(WorkloadRequest(f"s{s}-t{turn}", arrivals[i], prompt_ids, output_ids, last_index[s]))
            history[s] = prompt_ids + output_ids
            last_index[s] = i
    return out


_GENERATORS: dict[str, Callable[[WorkloadSpec, random.Random, _TokenSource], list[WorkloadRequest]]] = {
    "fixed": _fixed,
    "uniform": _fixed,  # ranges are drawn uniformly; a fixed length is a range of one value
    "lognormal": _lognormal_kind,
    "shared-prefix": _shared_prefix,
    "sessions": _sessions,
}


def generate_workload(spec: WorkloadSpec) -> list[WorkloadRequest]:
    rng = random.Random(int(spec.get("seed") or 0))
    return _GENERATORS[spec.kind](spec, rng, _TokenSource())
