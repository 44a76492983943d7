"""Prefix hits split by admission: a request's first admission (what the prefix cache served
from other requests' work) versus re-admissions after a preemption (which mostly re-find the
request's own blocks, and would flatter a hit rate that mixed them in)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AdmissionHits:
    """first_admission_hit_rate: prompt tokens served from the cache at first admissions / their
    prompt tokens: the prefix hit rate to compare with other systems and with an infinite-cache
    bound. readmission_hit_share: of all hit tokens, the share found by re-admissions.
    all_admissions_hit_rate: hit tokens / tokens of every admission, re-admissions included (a
    re-admitted request brings its prompt and the outputs so far): the figure the KV cache
    manager counts (SimulationReport.prefix_hit_rate)."""

    num_first_admissions: int
    first_admission_prompt_tokens: int
    first_admission_hit_tokens: int
    first_admission_hit_rate: float
    num_readmissions: int
    readmission_tokens: int
    readmission_hit_tokens: int
    readmission_hit_share: float
    all_admissions_hit_rate: float


class AdmissionCounter:
    """Counts admissions as the scheduler reports them (an entry with `is_new`: the tokens the
    request holds, and `positions.start`: the tokens its hit covered)."""

    def __init__(self) -> None:
        self.num_first = 0
        self.first_tokens = 0
        self.first_hit_tokens = 0
        self.num_re = 0
        self.re_tokens = 0
        self.re_hit_tokens = 0

    def note(self, is_first: bool, num_tokens: int, hit_len: int) -> None:
        if is_first:
            self.num_first += 1
            self.first_tokens += num_tokens
            self.first_hit_tokens += hit_len
        else:
            self.num_re += 1
            self.re_tokens += num_tokens
            self.re_hit_tokens += hit_len

    def snapshot(self) -> AdmissionHits:
        hits = self.first_hit_tokens + self.re_hit_tokens
        tokens = self.first_tokens + self.re_tokens
        return AdmissionHits(
            num_first_admissions=self.num_first,
            first_admission_prompt_tokens=self.first_tokens,
            first_admission_hit_tokens=self.first_hit_tokens,
            first_admission_hit_rate=_share(self.first_hit_tokens, self.first_tokens),
            num_readmissions=self.num_re,
            readmission_tokens=self.re_tokens,
            readmission_hit_tokens=self.re_hit_tokens,
            readmission_hit_share=_share(self.re_hit_tokens, hits),
            all_admissions_hit_rate=_share(hits, tokens),
        )


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0
