"""The blind budget's options through the CLI: --weights-memory, --quantization, --enforce-eager,
--language-model-only, the release's default utilization, and the fit verdict on stderr.

Expected figures are by hand: 7 GiB = 7,516,192,768 B; vLLM's default utilization is 0.9 before
0.20.0 and 0.92 from it (vllm/config/cache.py of each wheel); the CUDA graph estimate is subtracted
from 0.20.0 and never with --enforce-eager.
"""

import json

import pytest
from typer.testing import CliRunner

from hkv.cli.main import app

runner = CliRunner()


def plan_json(*args):
    result = runner.invoke(app, ["plan", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def terms(doc):
    return {t["name"]: t for t in doc["budget"]["terms"]}


def test_weights_memory_is_the_weights_term_exactly():
    doc = plan_json("gemma-3-4b", "--gpu", "l4", "--weights-memory", "7GiB")
    weights = terms(doc)["weights"]
    assert (weights["bytes"], weights["source"], weights["low_bytes"], weights["high_bytes"]) == (
        7_516_192_768, "given", 7_516_192_768, 7_516_192_768)


@pytest.mark.parametrize("version, utilization, graphs", [("0.19.0", 0.9, False), ("0.20.0", 0.92, True),
                                                         ("0.32.0", 0.92, True)])
def test_release_defaults(version, utilization, graphs):
    doc = plan_json("gemma-3-4b", "--gpu", "h100", "--vllm-version", version)
    assert doc["budget"]["gpu_memory_utilization"] == utilization
    assert (terms(doc)["cudagraph"]["bytes"] > 0) is graphs


def test_enforce_eager_takes_no_graph_estimate():
    assert terms(plan_json("gemma-3-4b", "--gpu", "h100"))["cudagraph"]["bytes"] > 0
    assert terms(plan_json("gemma-3-4b", "--gpu", "h100", "--enforce-eager"))["cudagraph"]["bytes"] == 0


def test_available_is_requested_less_the_terms_and_inside_its_band():
    doc = plan_json("qwen3-next-80b-a3b", "--gpu", "h200", "--tp", "2")
    budget = doc["budget"]
    assert budget["available_bytes"] == budget["requested_bytes"] - sum(t["bytes"] for t in budget["terms"])
    band = budget["available_band"]
    assert band["low_bytes"] < budget["available_bytes"] < band["high_bytes"]
    low, high = doc["layouts"]["vllm"]["capacity_band"]["kv_cache_tokens"]
    assert low < doc["layouts"]["vllm"]["capacity"]["kv_cache_tokens"] < high


@pytest.mark.parametrize("args, fragment", [
    (("--weights-memory", "7Gx"), "--weights-memory must be a size like"),
    (("--quantization", "awq"), "--quantization 'awq' needs a checkpoint quantized that way"),
])
def test_bad_values_are_one_line_and_exit_1(args, fragment):
    result = runner.invoke(app, ["plan", "gemma-3-4b", "--gpu", "l4", *args])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr


def test_a_start_the_band_allows_is_may_not_fit_not_does_not_fit():
    # gpt-oss-120b on one H100, vLLM 0.11, 16,000 tokens: vLLM started with 3.33 GiB (llm-d record r019)
    result = runner.invoke(app, ["plan", "gpt-oss-120b", "--gpu", "h100", "--vllm-version", "0.11.0",
                                 "--max-model-len", "16000", "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["budget"]["fit_verdict"] == "may not fit"
    assert "gpt-oss-120b may not fit:" in result.stderr


@pytest.mark.parametrize("option, default", [
    ("--weights-memory", "[default: from the checkpoint or config]"),
    ("--quantization", "[default: the checkpoint's quantization_config]"),
    ("--enforce-eager", "[default: off, graphs captured]"),
    ("--language-model-only", "[default: off, a multimodal checkpoint's towers load]"),
    ("--gpu-memory-utilization", "[default: the --vllm-version release's: 0.92 from 0.20.0, 0.9 before]"),
])
def test_new_options_state_their_default(option, default):
    text = " ".join(runner.invoke(app, ["plan", "--help"], env={"COLUMNS": "400"}).stdout.split())
    assert option in text and default in text
