"""Recurrent hybrids through hkv run equal transformers' own generate().

Each family runs 5 concurrent prompts of 61, 23, 37, 11 and 3 tokens (chunked prefill of 16
tokens per step, mixed with decodes; 3 is shorter than the conv kernel, 61 crosses the vllm
layout's 48-token state block) in each layout: states in the hkv / partitioned layouts' state
pool (4-token state blocks, a copy at every boundary), or in the vllm layout's padded attention
pages. Every sampled token equals transformers' greedy generate per prompt, and every sampled
token's logits are within 1e-4 (absolute, fp32) of the logits generate picked it from.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hkv.runtime.live import model_runner  # noqa: E402
from hkv.runtime.live.live_run import generate  # noqa: E402
from hkv.runtime.live.live_setup import RunOptions, load_runner, open_model, plan_run  # noqa: E402
from hkv.runtime.live.run_config import RunConfig  # noqa: E402
from hkv.runtime.live.run_report import build_report  # noqa: E402

from live.tiny_hybrids import HYBRIDS, reference_generate, save_hybrid  # noqa: E402
from live.tiny_models import load_reference, random_prompts  # noqa: E402

KV_BYTES = 1 << 20
MNBT = 16
MAX_NEW = 8
LOGIT_TOL = 1e-4  # absolute, fp32; measured 3.9e-6 to 4.0e-5 (logits up to about 4.8)
PROMPT_LENS = (61, 23, 37, 11, 3)


@pytest.fixture(scope="module")
def hybrids(tmp_path_factory):
    """family -> (model dir, prompts, [(tokens, logits)] of transformers' generate per prompt)."""
    cache: dict[str, tuple] = {}

    def get(family: str):
        if family not in cache:
            path = save_hybrid(family, tmp_path_factory.mktemp(family))
            reference = load_reference(path)
            prompts = random_prompts(PROMPT_LENS)
            cache[family] = (path, prompts, [reference_generate(reference, p, MAX_NEW) for p in prompts])
        return cache[family]

    return get


def make_runner(path, layout="hkv"):
    files = open_model(str(path))
    options = RunOptions(layout=layout, block_size=4, max_num_batched_tokens=MNBT, max_model_len=128)
    the_plan = plan_run(files, options, KV_BYTES)
    return the_plan.primary.layout, load_runner(files, the_plan, torch.device("cpu"))


@pytest.mark.parametrize("layout", ["hkv", "vllm", "partitioned"])
@pytest.mark.parametrize("family", list(HYBRIDS))
def test_hybrid_matches_generate(hybrids, family, layout):
    path, prompts, expected = hybrids(family)
    plan_layout, runner = make_runner(path, layout)
    config = RunConfig(max_new_tokens=MAX_NEW, max_num_batched_tokens=MNBT, record_logits=True,
                       check_tables=True)
    outcome = generate(runner, prompts, config)
    for generation, (tokens, logits) in zip(outcome.generations, expected, strict=True):
        assert generation.output_token_ids == tokens, (family, layout, len(generation.prompt_token_ids))
        error = float((torch.stack(generation.logits) - logits).abs().max())
        assert error <= LOGIT_TOL, (family, layout, error)
    # the allocation is the plan's, byte for byte, and so is every layer's state
    assert runner.kv_cache.num_bytes == sum(p.num_bytes for p in plan_layout.pools)
    report = build_report(plan_layout, KV_BYTES, runner.kv_cache.num_bytes, (max(PROMPT_LENS), MAX_NEW),
                          config, outcome)
    assert report.agree, [c for c in report.checks if not c.ok]
    assert report.states, "a recurrent hybrid reports its state groups"
    for state in report.states:
        assert state.measured_state_bytes == state.planned_state_bytes
        assert state.peak_states_per_request <= state.planned_states_per_request
        assert state.state_copies > 0  # live states moved across state blocks (61 > 48 tokens)
    assert outcome.timings.prefill_tokens == sum(PROMPT_LENS)


# Shared prefix lengths, and the hits they give by hand. A state checkpoint exists where a step
# ended on a state boundary: steps of 16 tokens end at the last boundary they cross.
# hkv (4-token state blocks), prompt 1 = 26 + 3 tokens: steps [0, 16) and [16, 28) leave
#   checkpoints at 16 and 28; prompt 2 shares 26 tokens, so it hits the one at 16.
# vllm (48-token blocks), prompt 1 = 50 + 3: steps [0, 16), [16, 32), [32, 48) leave one at 48.
SHARED_LEN = {"hkv": 26, "vllm": 50}
HIT_LEN = {"hkv": 16, "vllm": 48}


@pytest.mark.parametrize("family, layout", [
    ("bamba", "hkv"), ("jamba", "hkv"), ("qwen3_next", "hkv"), ("minimax", "hkv"), ("nemotron_h", "vllm"),
])
def test_prefix_hit_restores_a_checkpoint(hybrids, family, layout):
    path = hybrids(family)[0]
    shared = random_prompts((SHARED_LEN[layout],), seed=7)[0]
    prompts = [shared + [40, 41, 42], shared + [50, 51]]
    reference = load_reference(path)
    expected = [reference_generate(reference, p, 5)[0] for p in prompts]
    _, runner = make_runner(path, layout)
    one_at_a_time = dict(max_new_tokens=5, max_num_batched_tokens=MNBT, max_num_seqs=1, check_tables=True)
    cold = generate(runner, prompts, RunConfig(enable_prefix_caching=False, **one_at_a_time))
    warm = generate(runner, prompts, RunConfig(**one_at_a_time))
    hit_len = HIT_LEN[layout]
    assert warm.cache.num_hit_tokens == hit_len  # the second prompt starts at the checkpoint
    assert warm.timings.prefill_tokens == cold.timings.prefill_tokens - hit_len
    assert sum(s.checkpoints_restored for s in warm.states) == len(warm.states)  # one per state group
    assert sum(s.checkpoints_restored for s in cold.states) == 0
    for run in (cold, warm):
        assert [g.output_token_ids for g in run.generations] == expected


def test_a_hit_without_its_checkpoint_copy_is_caught(hybrids, monkeypatch):
    """The prefix test can fail: skip the copies (the hit then starts from a stale block) and
    the tokens differ from transformers'."""
    path = hybrids("bamba")[0]
    shared = random_prompts((26,), seed=7)[0]
    prompts = [shared + [40, 41, 42], shared + [50, 51]]
    expected = [reference_generate(load_reference(path), p, 5)[0] for p in prompts]
    monkeypatch.setattr(model_runner, "copy_states", lambda states, copies: None)
    _, runner = make_runner(path)
    run = generate(runner, prompts, RunConfig(max_new_tokens=5, max_num_batched_tokens=MNBT, max_num_seqs=1))
    assert run.cache.num_hit_tokens == HIT_LEN["hkv"]
    assert [g.output_token_ids for g in run.generations] != expected


def test_report_catches_a_wrong_state_size(hybrids):
    path, prompts, _ = hybrids("bamba")
    plan_layout, runner = make_runner(path)
    config = RunConfig(max_new_tokens=2, max_num_batched_tokens=MNBT)
    outcome = generate(runner, prompts[:1], config)
    honest = build_report(plan_layout, KV_BYTES, runner.kv_cache.num_bytes, (61, 2), config, outcome)
    assert honest.agree
    wrong = replace(outcome, states=tuple(replace(s, state_bytes=s.state_bytes - 4) for s in outcome.states))
    report = build_report(plan_layout, KV_BYTES, runner.kv_cache.num_bytes, (61, 2), config, wrong)
    assert not report.agree
    assert [c.name for c in report.checks if not c.ok] == ["group 1 (mamba2): state bytes per block == plan"]
