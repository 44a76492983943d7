"""hkv's packed, paged run of tiny models equals transformers' own greedy generate.

Each family runs 3 concurrent prompts of different lengths with chunked prefill (16 tokens per
step, so prefills span several steps mixed with decodes), block size 4 and windows / chunks of 8,
then compares every sampled token with transformers' `generate` per prompt and every sampled
token's logits with one eager forward over the whole sequence. The runner's block tables are
checked against the KV cache manager's on every step.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hkv.runtime.live.live_run import generate  # noqa: E402
from hkv.runtime.live.live_setup import RunOptions, load_runner, open_model, plan_run  # noqa: E402
from hkv.runtime.live.run_config import RunConfig, SamplingConfig  # noqa: E402
from hkv.runtime.live.run_report import build_report  # noqa: E402

from live.tiny_models import (  # noqa: E402
    FAMILIES, LOCAL_FAMILIES, load_reference, random_prompts, reference_greedy, reference_logits,
    save_tiny_model,
)

KV_BYTES = 1 << 20
MNBT = 16
MAX_NEW = 8
LOGIT_TOL = 2e-5  # relative to the largest |logit| (about 14 here); measured: 4e-7 to 7e-6, fp32


def make_runner(path, *, kv_bytes=KV_BYTES, layout="hkv", max_num_batched_tokens=MNBT):
    files = open_model(str(path))
    options = RunOptions(layout=layout, block_size=4, max_num_batched_tokens=max_num_batched_tokens,
                         max_model_len=128)
    the_plan = plan_run(files, options, kv_bytes)
    return files, the_plan, load_runner(files, the_plan, torch.device("cpu"))


def max_logit_error(reference, generation) -> float:
    """Largest |hkv - eager| over the generation's sampled positions, relative to the logit scale."""
    full = list(generation.prompt_token_ids) + generation.output_token_ids
    expected = reference_logits(reference, full)
    worst = 0.0
    for k, logits in enumerate(generation.logits):
        row = expected[len(generation.prompt_token_ids) - 1 + k]
        worst = max(worst, float((row - logits).abs().max() / row.abs().max().clamp(min=1.0)))
    return worst


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_matches_transformers(family, tmp_path):
    path = save_tiny_model(family, tmp_path)
    _, the_plan, runner = make_runner(path)
    prompts = random_prompts((23, 37, 11))
    config = RunConfig(max_new_tokens=MAX_NEW, max_num_batched_tokens=MNBT, record_logits=True,
                       check_tables=True)
    outcome = generate(runner, prompts, config)
    reference = load_reference(path)
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, MAX_NEW), family
        assert generation.finish_reason == "length"
        assert max_logit_error(reference, generation) < LOGIT_TOL, family
    # prefill spanned several steps, the last ones mixed with the first decodes
    assert outcome.timings.prefill_tokens == sum(map(len, prompts))
    assert outcome.timings.num_steps > sum(map(len, prompts)) // MNBT + MAX_NEW - 1
    if family in LOCAL_FAMILIES:  # windows / chunks of 8 are crossed: blocks were released early
        assert sum(outcome.cache.early_released_blocks) > 0
    layout = the_plan.primary.layout
    report = build_report(layout, KV_BYTES, runner.kv_cache.num_bytes, (37, MAX_NEW), config, outcome)
    assert report.agree, [c for c in report.checks if not c.ok]


@pytest.fixture(scope="module")
def gemma3(tmp_path_factory):
    path = save_tiny_model("gemma3", tmp_path_factory.mktemp("gemma3"))
    return path, load_reference(path)


@pytest.mark.parametrize("layout", ["vllm", "partitioned"])
def test_other_layouts_match(gemma3, layout):
    path, reference = gemma3
    _, the_plan, runner = make_runner(path, layout=layout)
    assert the_plan.primary.layout.name == layout
    prompts = random_prompts((30, 17), seed=3)
    config = RunConfig(max_new_tokens=6, max_num_batched_tokens=MNBT, check_tables=True)
    outcome = generate(runner, prompts, config)
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, 6)


def test_preemption_recomputes_and_still_matches(gemma3):
    path, reference = gemma3
    # 30 blocks of 2 KiB: three short prompts are admitted (7 blocks each), then grow to 33
    # tokens (9 full + 3-4 sliding blocks each) and cannot all stay
    _, _, runner = make_runner(path, kv_bytes=30 * 2048)
    prompts = random_prompts((9, 11, 7), seed=5)
    outcome = generate(runner, prompts, RunConfig(max_new_tokens=24, max_num_batched_tokens=MNBT,
                                                  check_tables=True))
    assert outcome.cache.num_preemptions > 0
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, 24)


def test_request_peaks_equal_a_scan_of_every_running_table(gemma3, monkeypatch):
    """The recorder counts a request's held blocks only when its table grows (admission or
    appended blocks); a scan of every running request's table after every schedule (the
    oracle) gives the same per-request peaks, through preemptions and sliding releases."""
    import hkv.runtime.live.live_run as live_run
    from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID

    path, _ = gemma3
    scanned: dict[str, list[int]] = {}
    record = live_run._Recorder.after_schedule

    def after_schedule(self, scheduler, output):
        record(self, scheduler, output)
        for request in scheduler.running:
            tables = self.kv.block_ids(request)
            peaks = scanned.setdefault(request.request_id, [0] * len(self.peak_groups))
            for g, table in enumerate(tables):
                peaks[g] = max(peaks[g], len(table) - table.count(NULL_BLOCK_ID))

    monkeypatch.setattr(live_run._Recorder, "after_schedule", after_schedule)
    _, _, runner = make_runner(path, kv_bytes=30 * 2048)  # as the preemption test above
    outcome = generate(runner, random_prompts((9, 11, 7), seed=5),
                       RunConfig(max_new_tokens=24, max_num_batched_tokens=MNBT))
    assert outcome.cache.num_preemptions > 0
    assert outcome.cache.request_peak_blocks == {rid: tuple(p) for rid, p in scanned.items()}
    assert sum(outcome.cache.early_released_blocks) > 0  # the sliding group released blocks


def test_prefix_cache_hit_matches(gemma3):
    path, reference = gemma3
    _, _, runner = make_runner(path)
    shared = random_prompts((24,), seed=7)[0]
    prompts = [shared + [40, 41, 42], shared + [50, 51]]
    # one request at a time: the second one finds the first one's cached blocks
    config = RunConfig(max_new_tokens=5, max_num_batched_tokens=MNBT, max_num_seqs=1, check_tables=True)
    outcome = generate(runner, prompts, config)
    assert outcome.cache.num_hit_tokens >= 20
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, 5)


def test_eos_stops_a_request(gemma3):
    path, reference = gemma3
    _, _, runner = make_runner(path)
    prompts = random_prompts((21, 15), seed=9)
    expected = reference_greedy(reference, prompts[0], MAX_NEW)
    stop_at = next(i for i in range(1, MAX_NEW) if expected[i] not in expected[:i])
    eos = expected[stop_at]
    outcome = generate(runner, prompts, RunConfig(max_new_tokens=MAX_NEW, max_num_batched_tokens=MNBT,
                                                  eos_token_ids=frozenset({eos})))
    first = outcome.generations[0]
    assert first.output_token_ids == expected[:stop_at + 1] and first.finish_reason == "eos"
    assert outcome.generations[1].output_token_ids == reference_greedy(reference, prompts[1], MAX_NEW, eos)


def test_sampling_is_seeded(gemma3):
    path, _ = gemma3
    _, _, runner = make_runner(path)
    prompts = random_prompts((12, 20), seed=11)

    def sample(seed):
        config = RunConfig(max_new_tokens=6, sampling=SamplingConfig(temperature=0.9, top_p=0.9, seed=seed))
        return [g.output_token_ids for g in generate(runner, prompts, config).generations]

    first = sample(7)
    assert first == sample(7)
    assert all(len(tokens) == 6 for tokens in first)


def test_multimodal_gemma3_runs_its_language_model(tmp_path):
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    from live.tiny_models import FAMILIES, TINY

    text = {**TINY, **FAMILIES["gemma3"][1]}
    vision = dict(hidden_size=32, num_attention_heads=2, intermediate_size=48, num_hidden_layers=1,
                  image_size=28, patch_size=14)
    config = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4,
                          image_token_index=255, boi_token_index=253, eoi_token_index=254,
                          tie_word_embeddings=False)
    torch.manual_seed(0)
    Gemma3ForConditionalGeneration(config).save_pretrained(tmp_path)
    files, _, runner = make_runner(tmp_path)
    assert type(runner.model).__name__ == "Gemma3ForCausalLM"
    assert files.spec.model_type == "gemma3"
    prompts = random_prompts((19, 26), seed=13, vocab_size=250)
    outcome = generate(runner, prompts, RunConfig(max_new_tokens=6, max_num_batched_tokens=MNBT))
    reference = Gemma3ForConditionalGeneration.from_pretrained(tmp_path, attn_implementation="eager").eval()
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, 6)
