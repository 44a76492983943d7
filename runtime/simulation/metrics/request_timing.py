"""Per-request timings of a replay and what users of traces compare on: queueing delay, a TTFT
proxy, latency (p50 / p90 / p99) and completed-request throughput, all in simulated seconds."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from math import isnan

from hkv.runtime.simulation.metrics.percentiles import Percentiles, percentiles_of

_UNSET = float("nan")


@dataclass(frozen=True)
class TimingSummary:
    """queueing_delay_s: arrival to the start of the step that first schedules the request (its
    first admission); ttft_s (a time-to-first-token proxy): arrival to the end of the step that
    emits its first output token; latency_s: arrival to the end of its last step. "Arrival" is
    when the request could first be scheduled: its trace arrival, or the finish of the request it
    depends on (the previous turn) when that is later. finished_per_s: requests finished per
    simulated second from the first arrival to the last finish (0.0 before one finishes)."""

    queueing_delay_s: Percentiles
    ttft_s: Percentiles
    latency_s: Percentiles
    finished_per_s: float


class RequestTimings:
    """One record per request, indexed in workload order: arrival, first scheduled, first token
    and finish times (NaN until they happen). A few floats per request, O(1) per event."""

    def __init__(self) -> None:
        self.arrival_s = array("d")
        self.first_scheduled_s = array("d")
        self.first_token_s = array("d")
        self.finish_s = array("d")

    def add(self) -> None:
        """A request was pulled from the workload: its record is the next index."""
        for column in (self.arrival_s, self.first_scheduled_s, self.first_token_s, self.finish_s):
            column.append(_UNSET)

    def summary(self) -> TimingSummary:
        arrival, finish = self.arrival_s, self.finish_s
        finished = [i for i, t in enumerate(finish) if not isnan(t)]
        first_arrival_s = min((t for t in arrival if not isnan(t)), default=0.0)
        span_s = max(finish[i] for i in finished) - first_arrival_s if finished else 0.0
        return TimingSummary(
            queueing_delay_s=_delays(arrival, self.first_scheduled_s),
            ttft_s=_delays(arrival, self.first_token_s),
            latency_s=_delays(arrival, finish),
            finished_per_s=len(finished) / span_s if span_s > 0 else 0.0,
        )


def _delays(start_s: array, end_s: array) -> Percentiles:
    return percentiles_of(end - start for start, end in zip(start_s, end_s) if not isnan(end))
