"""The simulator's metrics on workloads small enough to follow step by step."""

import json
from array import array
from dataclasses import asdict

import pytest
from rt_layouts import FULL, make_group, make_layout

from hkv.runtime.scheduler.scheduler import SchedulerConfig
from hkv.runtime.simulation.metrics.step_cost import StepCost
from hkv.runtime.simulation.simulator import SimulationConfig, Simulator
from hkv.runtime.simulation.workload_request import WorkloadRequest


def _toks(start: int, n: int) -> array:
    return array("q", range(start, start + n))


def _config(**kw) -> SimulationConfig:
    return SimulationConfig(SchedulerConfig(max_num_batched_tokens=16, max_num_seqs=4), check_integrity_every=1, **kw)


def _layout(num_blocks: int = 33):
    return make_layout([make_group(FULL, 4)], [num_blocks])


def test_queueing_delay_ttft_and_latency_by_hand() -> None:
    # Steps cost 10 ms + 1 ms per batched token. a (8-token prompt, 2 outputs) arrives at 0:
    #   step 1, 0 -> 18 ms: a's prefill (8 tokens) emits its first token;
    # b arrives at 5 ms and waits for step 2:
    #   step 2, 18 -> 37 ms: a decodes (1) and b prefills (8); a finishes, b's first token;
    #   step 3, 37 -> 48 ms: b decodes; b finishes.
    workload = [WorkloadRequest("a", 0.0, _toks(1, 8), _toks(100, 2)),
                WorkloadRequest("b", 0.005, _toks(50, 8), _toks(200, 2))]
    report = Simulator(_layout(), workload, _config(step_base_s=0.010, step_per_token_s=0.001)).run()
    t = report.timing
    assert report.simulated_s == pytest.approx(0.048)
    assert (t.queueing_delay_s.count, t.queueing_delay_s.max) == (2, pytest.approx(0.013))  # b: 5 -> 18 ms
    assert t.queueing_delay_s.p50 == 0.0  # a started at once
    assert t.ttft_s.p50 == pytest.approx(0.018) and t.ttft_s.max == pytest.approx(0.032)  # b: 5 -> 37 ms
    assert t.latency_s.p50 == pytest.approx(0.037) and t.latency_s.max == pytest.approx(0.043)  # a 37, b 43 ms
    assert t.finished_per_s == pytest.approx(2 / 0.048)
    assert report.step_time_model == "fixed" and report.compute_bound_steps == 0


def test_a_next_turn_arrives_when_the_previous_one_finishes() -> None:
    # c depends on a; steps cost 10 ms + 1 ms per token: a's prefill 0 -> 18 ms, its decode
    # 18 -> 29 ms. c arrives when a finishes (29 ms, though its own arrival says 0).
    workload = [WorkloadRequest("a", 0.0, _toks(1, 8), _toks(100, 2)),
                WorkloadRequest("c", 0.0, _toks(1, 8) + _toks(100, 2) + _toks(300, 2), _toks(400, 1), depends_on=0)]
    report = Simulator(_layout(), workload, _config(step_base_s=0.010, step_per_token_s=0.001)).run()
    # c is scheduled at once: queueing delay 0 for both, not 29 ms for c
    assert report.timing.queueing_delay_s.max == 0.0
    # c's 12-token prompt hits a's cached 8 (two blocks of 4; the third block is not full), so it
    # computes 4 tokens: 29 -> 43 ms, its only output token 14 ms after arriving
    assert report.hits.first_admission_hit_tokens == 8
    assert report.timing.ttft_s.p50 == pytest.approx(0.014) and report.timing.ttft_s.max == pytest.approx(0.018)
    assert report.timing.latency_s.p50 == pytest.approx(0.014) and report.timing.latency_s.max == pytest.approx(0.029)


def test_first_admission_hits_of_a_shared_prefix() -> None:
    # a and b share 8 of 12 prompt tokens; b arrives after a finished: b's hit is the two shared
    # blocks (8 tokens). First admissions: 8 hit of 24 prompt tokens; no re-admission.
    shared = _toks(1, 8)
    workload = [WorkloadRequest("a", 0.0, shared + _toks(20, 4), _toks(100, 2)),
                WorkloadRequest("b", 1.0, shared + _toks(40, 4), _toks(200, 2))]
    report = Simulator(_layout(), workload, _config()).run()
    h = report.hits
    assert (h.num_first_admissions, h.first_admission_prompt_tokens, h.first_admission_hit_tokens) == (2, 24, 8)
    assert h.first_admission_hit_rate == pytest.approx(1 / 3)
    assert (h.num_readmissions, h.readmission_hit_share) == (0, 0.0)
    assert report.prefix_hit_rate == pytest.approx(1 / 3)  # the manager's count agrees without re-admissions


def _preempting_workload() -> list[WorkloadRequest]:
    # Four 16-token prompts growing by 24 tokens each in a pool too small for all of them to grow.
    return [WorkloadRequest(f"r{i}", 0.0, _toks(1000 * i, 16), _toks(1000 * i + 500, 24)) for i in range(4)]


def test_readmissions_are_counted_apart_and_agree_with_the_manager() -> None:
    report = Simulator(_layout(num_blocks=25), _preempting_workload(), _config()).run()
    h = report.hits
    assert report.num_preemptions > 0 and h.num_readmissions == report.num_preemptions
    assert h.num_first_admissions == 4 and h.first_admission_prompt_tokens == 4 * 16
    # distinct prompts: every first-admission hit is 0; re-admissions re-find their own blocks
    assert h.first_admission_hit_tokens == 0 and h.readmission_hit_tokens > 0
    assert h.readmission_hit_share == 1.0
    # the KV cache manager counts every admission: its figures are the sum of both kinds
    assert report.num_hit_tokens == h.first_admission_hit_tokens + h.readmission_hit_tokens
    assert report.prefix_hit_rate == pytest.approx(h.all_admissions_hit_rate)
    assert h.all_admissions_hit_rate > h.first_admission_hit_rate


def test_per_group_evictions_sum_to_the_pool_count() -> None:
    # 12 distinct 16-token prompts through a 24-block pool: cached blocks get evicted
    workload = [WorkloadRequest(f"r{i}", 0.01 * i, _toks(1000 * i, 16), _toks(1000 * i + 500, 4)) for i in range(12)]
    report = Simulator(_layout(num_blocks=25), workload, _config()).run()
    assert report.num_evictions > 0
    assert sum(g.evicted_blocks for g in report.groups) == report.num_evictions
    # one full-attention group of 4-token blocks: each evicted block is 4 tokens of the stack
    assert report.evictions.evicted_tokens == 4.0 * report.num_evictions


def test_roofline_steps_by_hand() -> None:
    # One 8-token request, 2 outputs, on a dense model of 16 GB at 3.35 TB/s, 1e12 FLOP per token
    # at 1e15 FLOP/s. make_group: 32 bytes of KV per token.
    #   step 1: 8-token prefill: 8 ms of compute > 4.776 ms of reads: compute bound
    #   step 2: decode over 8 + 1 tokens: (16e9 + 9 x 32) / 3.35e12 s
    cost = StepCost("h100", 3.35e12, 1e15, 16 * 10**9, 0, 0, 0, 1e12)
    workload = [WorkloadRequest("a", 0.0, _toks(1, 8), _toks(100, 2))]
    report = Simulator(_layout(), workload, _config(step_cost=cost)).run()
    assert report.simulated_s == pytest.approx(8e-3 + (16e9 + 9 * 32) / 3.35e12, rel=1e-9)
    assert report.step_time_model == "roofline" and report.compute_bound_steps == 1
    assert "3.35 TB/s" in report.step_time_detail and "estimate" in report.step_time_detail


def test_roofline_context_survives_preemptions() -> None:
    # check_integrity_every=1 asserts the tracked context equals the running requests' computed
    # tokens after every step, preemptions included
    cost = StepCost("h100", 3.35e12, 1e15, 10**9, 0, 0, 0, 1e9)
    report = Simulator(_layout(num_blocks=25), _preempting_workload(), _config(step_cost=cost)).run()
    assert report.num_preemptions > 0 and report.num_finished == 4


def test_the_report_is_strict_json() -> None:
    report = Simulator(_layout(num_blocks=25), _preempting_workload(), _config()).run()
    doc = json.loads(json.dumps(asdict(report), allow_nan=False))
    series = doc["time_series"]
    assert len(series["t_s"]) == len(series["running"]) == len(series["hit_rate"]) > 0
    assert doc["timing"]["ttft_s"]["count"] == 4
