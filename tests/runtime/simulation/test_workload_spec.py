"""Workload specs and generators: parsing errors and the shapes of generated requests."""

import pytest

from hkv.planner.errors import InvalidInputError
from hkv.runtime.simulation.workload_gen import generate_workload
from hkv.runtime.simulation.workload_spec import parse_workload


def test_fixed_lengths_and_unique_tokens():
    reqs = generate_workload(parse_workload("fixed:n=3,prompt=5,output=2"))
    assert [(r.prompt_len, r.output_len, r.arrival_s) for r in reqs] == [(5, 2, 0.0)] * 3
    all_ids = [t for r in reqs for t in list(r.prompt_token_ids) + list(r.output_token_ids)]
    assert len(all_ids) == len(set(all_ids))  # nothing shared by accident


def test_shared_prefix_shares_exactly_the_prefix():
    reqs = generate_workload(parse_workload("shared-prefix:n=4,prefix=6,prompt=3,output=1,prefixes=2"))
    assert all(r.prompt_len == 9 for r in reqs)
    assert reqs[0].prompt_token_ids[:6] == reqs[2].prompt_token_ids[:6]  # prefix 0 for requests 0, 2
    assert reqs[0].prompt_token_ids[:6] != reqs[1].prompt_token_ids[:6]
    assert reqs[0].prompt_token_ids[6:] != reqs[2].prompt_token_ids[6:]


def test_sessions_resend_the_conversation():
    reqs = generate_workload(parse_workload("sessions:sessions=2,turns=3,prompt=4,output=2"))
    assert [r.request_id for r in reqs] == ["s0-t0", "s1-t0", "s0-t1", "s1-t1", "s0-t2", "s1-t2"]
    t0, t1 = reqs[0], reqs[2]
    assert t1.depends_on == 0 and t0.depends_on is None
    # turn 1 = turn 0 prompt (4) + turn 0 output (2) + 4 new tokens
    assert t1.prompt_len == 10
    assert t1.prompt_token_ids[:6] == t0.prompt_token_ids + t0.output_token_ids


def test_uniform_and_lognormal_are_seeded():
    a = generate_workload(parse_workload("uniform:n=50,prompt=10-20,output=1-3,seed=7"))
    b = generate_workload(parse_workload("uniform:n=50,prompt=10-20,output=1-3,seed=7"))
    assert [r.prompt_len for r in a] == [r.prompt_len for r in b]
    assert all(10 <= r.prompt_len <= 20 and 1 <= r.output_len <= 3 for r in a)
    logn = generate_workload(parse_workload("lognormal:n=200,prompt=100,output=10,sigma=0.5"))
    lengths = sorted(r.prompt_len for r in logn)
    assert 60 < lengths[100] < 160  # median near 100


def test_poisson_arrivals_increase():
    reqs = generate_workload(parse_workload("fixed:n=20,prompt=4,output=1,rate=10"))
    times = [r.arrival_s for r in reqs]
    assert times == sorted(times) and times[0] > 0


@pytest.mark.parametrize("text, fragment", [
    ("fixd:n=3", "did you mean fixed"),
    ("fixed:n=0", "n must be a positive integer"),
    ("fixed:n=abc", "n must be a positive integer"),
    ("fixed:prompt=20-10", "MIN <= MAX"),
    ("fixed:rate=-1", "rate must be a positive number"),
    ("fixed:colour=red", "keys are"),
    ("sessions:n=5", "keys are"),
])
def test_bad_specs(text, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        parse_workload(text)
