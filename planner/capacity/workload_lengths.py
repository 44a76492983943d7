"""WorkloadLengths: a workload's length distribution, reduced to what sizes the hkv layout.

The hkv layout splits its budget between the attention pool and the recurrent state pool so
that both run out together at one sequence length (planner/split_pools.py). Sized for
max_model_len, the state pool holds only as many states as max-length requests fit; a replayed
trace whose requests are far shorter then runs a handful at once while attention blocks sit
idle. Sized for the workload's mean request length, the pools match the mix of requests that
actually run: each request holds one state however long it is, and the attention blocks of the
mean length. The mean (not a percentile) because pool demand adds up over the requests in the
pools: n requests of lengths l_i need n states and sum(l_i) = n x mean tokens of attention.

Pure: no I/O; callers pass (prompt_len, output_len) pairs (a trace source's `lengths()`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from hkv.planner.errors import InvalidInputError
from hkv.planner.plan_config import PlanConfig


@dataclass(frozen=True)
class WorkloadLengths:
    """Totals over a workload's requests (prompt and output tokens)."""

    num_requests: int
    prompt_tokens: int
    output_tokens: int

    def __post_init__(self) -> None:
        if self.num_requests < 0 or self.prompt_tokens < 0 or self.output_tokens < 0:
            raise ValueError(f"negative totals in {self}")

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, int]]) -> WorkloadLengths:
        """Totals of (prompt_len, output_len) pairs, one per request (consumed once)."""
        num_requests = prompt_tokens = output_tokens = 0
        for prompt_len, output_len in pairs:
            num_requests += 1
            prompt_tokens += prompt_len
            output_tokens += output_len
        return cls(num_requests, prompt_tokens, output_tokens)

    @property
    def mean_seq_len(self) -> float:
        """Mean prompt + output tokens per request (0 for no request)."""
        if not self.num_requests:
            return 0.0
        return (self.prompt_tokens + self.output_tokens) / self.num_requests

    def split_len(self, max_model_len: int) -> int:
        """The length to size the hkv layout's pools for (PlanConfig.expected_avg_seq_len): the
        mean request length rounded to the nearest token, within [1, max_model_len]. Raises
        InvalidInputError for a workload without requests."""
        if not self.num_requests:
            raise InvalidInputError("the workload has no request to size the hkv layout from; "
                                    "give expected_avg_seq_len instead",
                                    fields=("expected_avg_seq_len",))
        return max(1, min(max_model_len, round(self.mean_seq_len)))


def split_len_of(pairs: Iterable[tuple[int, int]], max_model_len: int) -> int:
    """`WorkloadLengths.of(pairs).split_len(max_model_len)`: what `hkv simulate` sets as
    expected_avg_seq_len when replaying a trace without --expected-avg-seq-len."""
    return WorkloadLengths.of(pairs).split_len(max_model_len)


def sized_for_workload(cfg: PlanConfig, pairs: Iterable[tuple[int, int]], max_model_len: int) -> PlanConfig:
    """`cfg` with expected_avg_seq_len set to the workload's split length, unless it is already
    set (--expected-avg-seq-len or EXPECTED_AVERAGE_SEQ_LENGTH win; `pairs` is then not read)."""
    if cfg.expected_avg_seq_len is not None:
        return cfg
    return replace(cfg, expected_avg_seq_len=split_len_of(pairs, max_model_len))
