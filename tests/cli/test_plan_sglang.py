"""`hkv plan --engine vllm,sglang` and `--emit sglang`, through typer's CliRunner.

Hand-worked SGLang case, Llama-3.1-8B (32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a
token) on an 80 GiB card, --weights-memory 16GiB, --mem-fraction-static 0.9: SGLang measures
79.5 GiB free before loading (80 GiB less the 0.5 GiB CUDA context hkv estimates, said on stderr);
rest = (79.5 - 16) - 79.5 x (1 - 0.9) = 55.55 GiB = 59,646,566,809 B -> 455,065 tokens
(55.55 x 8,192 = 455,065.6); max_running_requests = min(clamp(455,065 / 8,192 x 512, 2,048,
4,096), 455,065 // 2) = 4,096; 455,065 // 8,192 = 55 requests of 8,192 tokens fit at once.
"""

from __future__ import annotations

import json

import pytest
from hkv.cli.main import app
from typer.testing import CliRunner

runner = CliRunner()
LLAMA = ("llama-3.1-8b-instruct", "--gpu-memory", "80GiB", "--weights-memory", "16GiB", "--mem-fraction-static",
         "0.9", "--max-model-len", "8192")


def run(*args):
    return runner.invoke(app, ["plan", *args])


def json_of(*args):
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_hand_worked_sglang_column_and_the_vllm_column_is_the_default_plan():
    doc = json_of(*LLAMA, "--engine", "vllm,sglang")
    assert [e["engine"] for e in doc["engines"]] == ["vllm", "sglang"]
    vllm, sglang = doc["engines"]
    assert (sglang["kv_cache_tokens"], sglang["max_running_requests"], sglang["swa_tokens"], sglang["state_slots"],
            sglang["fit_at_once"], sglang["sustained_concurrency"], sglang["fits"]) == (
        455_065, 4_096, None, None, 55, None, True)
    assert sglang["available_kv_bytes"] == int(55.55 * 2**30)
    assert doc["sglang"]["pools"]["max_total_num_tokens"] == 455_065
    # the vllm column carries the numbers of the plan hkv prints without --engine
    plain = json_of(*LLAMA[:5], "--max-model-len", "8192")
    capacity = plain["layouts"]["vllm"]["capacity"]
    assert (vllm["kv_cache_tokens"], vllm["sustained_concurrency"], vllm["fit_at_once"],
            vllm["available_kv_bytes"]) == (capacity["kv_cache_tokens"], capacity["sustained_concurrency"],
                                            capacity["max_num_requests"], plain["budget"]["available_bytes"])
    assert doc["vllm"]["layouts"]["vllm"]["capacity"] == capacity


def test_human_table_has_both_columns_and_each_engine_log_line():
    result = run(*LLAMA, "--engine", "vllm,sglang")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "455,065" in out and "4,096" in out
    assert "sglang log: max_total_num_tokens=455065," in out
    assert "vllm log: GPU KV cache size:" in out
    assert "0.50 GiB CUDA context" in out  # the estimate the hand calculation rests on is said


def test_issue_example_gpt_oss_120b_both_formats():
    args = ("gpt-oss-120b", "--gpu", "h100", "--engine", "vllm,sglang", "--max-model-len", "32768")
    human = run(*args)
    assert human.exit_code == 0, human.stderr
    assert "vllm" in human.stdout and "sglang" in human.stdout and "sliding-window pool tokens" in human.stdout
    doc = json_of(*args)
    sglang = doc["engines"][1]
    # gpt-oss: SGLang's hybrid SWA pool, swa = int(full x 0.8) rounded to the page (1)
    assert sglang["swa_tokens"] == int(sglang["kv_cache_tokens"] * 0.8)
    assert sglang["max_model_len"] == 32768 and doc["engines"][0]["max_model_len"] == 32768
    assert sglang["fit_at_once"] is None  # a sliding pool's share per request is not predicted


def test_default_output_is_unchanged_by_the_engine_option():
    assert json_of(*LLAMA[:5]) == json_of(*LLAMA[:5], "--engine", "vllm")


@pytest.mark.parametrize(("args", "message"), [
    (("--engine", "vllm,trt"), "--engine must be a comma-separated list of vllm, sglang, got 'vllm,trt'"),
    (("--engine", "sglang,sglang"), "give each engine once"),
    (("--engine", "vllm,sglang", "--emit", "vllm"), "--emit vllm prints one engine's command"),
    (("--engine", "vllm,sglang", "--tp", "1,2"), "plan one GPU and TP"),
    (("--engine", "sglang", "--mem-fraction-static", "1.5"), "--mem-fraction-static must be between 0 and 1"),
    (("--mem-fraction-static", "0.8"), "--mem-fraction-static applies to SGLang only; add --engine"),
    (("--sglang-version", "0.5.20", "--mem-fraction-static", "0.8"),
     "--sglang-version and --mem-fraction-static apply to SGLang only"),
    (("--engine", "sglang", "--sglang-version", "0.4.0"), "--sglang-version 0.4.0 is outside the releases hkv models"),
])
def test_bad_engine_input_is_one_line_exit_1(args, message):
    result = run("llama-3.1-8b-instruct", "--gpu", "h100", *args)
    assert result.exit_code == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_sglang_that_cannot_start_is_a_column_that_does_not_fit():
    # 16 GiB of weights on a 16 GiB card: SGLang has no rest; vLLM's plan says it does not fit either
    doc = json_of("llama-3.1-8b-instruct", "--gpu-memory", "16GiB", "--weights-memory", "16GiB", "--engine",
                  "vllm,sglang")
    assert [e["fits"] for e in doc["engines"]] == [False, False]
    assert "leave no memory for the KV cache" in doc["sglang"]["error"]


def test_emit_sglang_human_and_json():
    result = run(*LLAMA, "--emit", "sglang")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-4:] == ["python3 -m sglang.launch_server \\",
                                               "  --model-path meta-llama/Llama-3.1-8B-Instruct \\",
                                               "  --mem-fraction-static 0.9 \\", "  --context-length 8192"]
    doc = json_of(*LLAMA, "--emit", "sglang", "--tp", "2")
    assert doc["serve"]["argv"] == ["python3", "-m", "sglang.launch_server", "--model-path",
                                    "meta-llama/Llama-3.1-8B-Instruct", "--mem-fraction-static", "0.9",
                                    "--tp-size", "2", "--context-length", "8192"]
    assert doc["sglang"]["pools"]["mem_fraction_static"] == 0.9


def test_vllm_only_budget_options_are_said_to_leave_sglang_alone():
    result = run("llama-3.1-8b-instruct", "--gpu", "h100", "--engine", "vllm,sglang", "--available-kv-memory", "20GiB")
    assert result.exit_code == 0, result.stderr
    assert ("sglang: --available-kv-memory sets vLLM's budget only; SGLang's comes from the card and "
            "--mem-fraction-static") in result.stdout


def test_engines_json_has_a_startup_verdict_per_engine():
    doc = json_of("nemotron-3-nano-30b-a3b", "--gpu", "h100", "--max-model-len", "32768", "--engine", "vllm,sglang")
    assert set(doc["startup"]) == {"vllm", "sglang"}
    assert doc["startup"]["vllm"]["starts"] is False and doc["startup"]["sglang"]["starts"] is True
    codes = [w["code"] for w in doc["startup"]["sglang"]["warnings"]]
    assert codes == ["max_running_requests_capped_by_mamba", "mamba_pool_split"]
