"""`hkv run` end to end on every recurrent hybrid family, in both output formats, and --fill's
sustained concurrency measured through a hybrid's real state pool."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from typer.testing import CliRunner  # noqa: E402

from hkv.cli.main import app  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from live.tiny_hybrids import HYBRIDS, reference_generate, save_hybrid  # noqa: E402
from live.tiny_models import load_reference  # noqa: E402

runner = CliRunner()
# 2 MiB: state pools of 10+ blocks, so prompt 1's checkpoint at 16 outlives its later ones
# (Falcon-H1's 3-layer states leave 1 MiB 3 usable state blocks, and LRU evicts the one at 16)
SMALL = ["--block-size", "4", "--max-num-batched-tokens", "16", "--max-new-tokens", "5", "--max-model-len", "128",
         "--kv-memory", "2MiB"]
SHARED = list(range(10, 36))  # 26 tokens: the second prompt hits the first's checkpoint at 16


@pytest.fixture(scope="module")
def prompt_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("prompts") / "prompts.jsonl"
    path.write_text(json.dumps({"token_ids": SHARED + [40, 41, 42]}) + "\n"
                    + json.dumps({"token_ids": SHARED + [50, 51]}) + "\n")
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    cache: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in cache:
            cache[family] = save_hybrid(family, tmp_path_factory.mktemp(family))
        return cache[family]

    return get


def run(*args, env=None):
    return runner.invoke(app, ["run", *map(str, args)], env=env)


@pytest.mark.parametrize("family", list(HYBRIDS))
def test_hybrid_json(models, prompt_file, family):
    path = models(family)
    result = run("--model", path, "--prompt-file", prompt_file, "--max-num-seqs", "1", *SMALL, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    reference = load_reference(path)
    for generation, prompt in zip(doc["generations"], (SHARED + [40, 41, 42], SHARED + [50, 51]), strict=True):
        assert generation["token_ids"] == reference_generate(reference, prompt, 5)[0]
    report = doc["report"]
    assert report["agree"] is True
    (state,) = report["states"]  # one recurrent group in every tiny hybrid
    assert state["measured_state_bytes"] == state["planned_state_bytes"] > 0
    assert state["peak_states_per_request"] == state["planned_states_per_request"] == 1
    assert state["checkpoints_restored"] == 1 and state["checkpoints_kept"] > 0
    assert report["num_hit_tokens"] == 16  # checkpoints at 16 and 28 (steps end on state boundaries)
    assert doc["timings"]["prefill_tokens"] == 29 + 28 - 16


@pytest.mark.parametrize("family", list(HYBRIDS))
def test_hybrid_human(models, prompt_file, family):
    result = run("--model", models(family), "--prompt-file", prompt_file, *SMALL, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    assert "recurrent state: planned vs measured" in result.stdout
    assert "state bytes per block == plan" in result.stdout and "agree: yes" in result.stdout


# --fill, hkv layout, 1 MiB, copies of 30 + 24 tokens: the state pool has 6 blocks of
# 2 layers x (conv 3 x 288 + ssm 4 x 64 x 16) x 4 B = 39,680 B, the null block aside 5 states,
# one per running request; the attention pool's 196 usable 4-token blocks hold 196 // cdiv(54, 4)
# = 14 requests. Sustained: min(5, 14) = 5. The vllm layout's figure (states in 48-token attention
# pages, 3 state blocks per request) and the other families' are checked against the run only.
@pytest.mark.parametrize("family, layout, sustained", [
    ("bamba", "hkv", 5), ("bamba", "vllm", None), ("jamba", "partitioned", None), ("qwen3_next", "vllm", None),
    ("minimax", "hkv", None), ("falcon_h1", "hkv", None),
])
def test_fill_measures_a_hybrids_sustained_concurrency(models, tmp_path, family, layout, sustained):
    prompt = tmp_path / "one.jsonl"
    prompt.write_text(json.dumps({"token_ids": list(range(10, 40))}) + "\n")
    result = run("--model", models(family), "--prompt-file", prompt, "--block-size", "4",
                 "--max-num-batched-tokens", "16", "--max-new-tokens", "24", "--max-model-len", "128",
                 "--kv-memory", "1MiB", "--layout", layout, "--fill", "--format", "json")
    assert result.exit_code == 0, result.stderr
    fill = json.loads(result.stdout)["report"]["fill"]
    assert fill["measured_sustained"] == fill["predicted_sustained"] and not fill["capped"]
    if sustained is not None:
        assert fill["measured_sustained"] == sustained


def test_fp8_state_is_refused_before_loading(models, prompt_file):
    result = run("--model", models("bamba"), "--prompt-file", prompt_file, *SMALL, "--mamba-ssm-dtype", "fp8")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "hkv: error: --mamba-ssm-dtype fp8: the plan keeps layers.0.mixer's state in 1-byte elements; hkv run "
        "keeps recurrent states in float32, bfloat16 or float16"]
    assert result.stdout == ""
