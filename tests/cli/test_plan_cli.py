"""`hkv plan`, `hkv models`, `hkv gpus` through typer's CliRunner: exit codes, stderr, JSON schema."""

import json

import pytest
from typer.testing import CliRunner

from hkv.cli.main import app

runner = CliRunner()


def run(*args, env=None):
    return runner.invoke(app, list(args), env=env)


def test_plan_json_schema():
    result = run("plan", "gemma-3-27b", "--gpu", "h100", "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1
    assert set(doc["layouts"]) == {"hkv", "vllm", "vllm-no-hybrid", "partitioned"}
    vllm = doc["layouts"]["vllm"]
    for key in ("num_blocks", "block_size", "bytes_per_block", "padding_layers", "waste_fraction", "groups",
                "capacity", "log_lines"):
        assert key in vllm
    for key in ("kv_cache_tokens", "max_concurrency", "max_model_len", "blocks_per_request", "max_context_len"):
        assert key in vllm["capacity"]
    for key in ("kind", "layers", "num_layers", "block_size", "page_size_bytes"):
        assert key in vllm["groups"][0]
    # Gemma-3-27B under vLLM: 6 sliding groups [9,9,9,9,8,8] + full x10, 8 padding slots, 1,310,720 B/block
    assert [g["num_layers"] for g in vllm["groups"]] == [9, 9, 9, 9, 8, 8, 10]
    assert vllm["padding_layers"] == 8 and vllm["bytes_per_block"] == 1_310_720
    assert vllm["log_lines"][0].startswith("GPU KV cache size: ")
    assert doc["layouts"]["hkv"]["padding_layers"] < 8


def test_plan_human_output_names_layouts():
    result = run("plan", "gemma-3-27b", "--gpu", "h100", env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.stderr
    for word in ("memory budget", "hkv", "vllm", "partitioned", "concurrency", "6x8-9 sliding + 1x10 full"):
        assert word in result.stdout


def test_available_kv_memory_is_exact():
    result = run("plan", "gpt-oss-120b", "--available-kv-memory", "10GiB", "--format", "json")
    doc = json.loads(result.stdout)
    # 18 layers x 32,768 B pages -> 589,824 B per block; 10 GiB // that = 18,204 blocks
    assert doc["layouts"]["vllm"]["num_blocks"] == 10 * 2**30 // 589_824 == 18_204


@pytest.mark.parametrize("args, fragment", [
    (("plan", "gemma-3-72b"), "gemma-3-"),  # unknown model: close matches named
    (("plan", "gemma-3-27b", "--gpu", "h1000"), "h100"),
    (("plan", "gemma-3-27b", "--gpu-memory", "lots"), "--gpu-memory"),
    (("plan", "gemma-3-27b", "--expected-avg-seq-len", "1.5"), "--expected-avg-seq-len"),
    (("plan", "gemma-3-27b", "--tp", "0"), "--tp"),
    (("plan", "gemma-3-27b", "--layout", "jenga"), "--layout"),
    (("plan", "/nonexistent/dir"), "/nonexistent/dir"),
])
def test_bad_input_is_one_line_and_exit_1(args, fragment):
    result = run(*args)
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hkv: error: ") and fragment in lines[0]


@pytest.mark.parametrize("value", ["abc", "0", "-3", "1.5", ""])
def test_expected_avg_env_errors_name_the_variable(value):
    result = run("plan", "gemma-3-27b", env={"EXPECTED_AVERAGE_SEQ_LENGTH": value})
    assert result.exit_code == 1
    assert "EXPECTED_AVERAGE_SEQ_LENGTH" in result.stderr and result.stdout == ""


def test_model_too_large_for_gpu_reports_and_exits_0():
    # 27B bf16 = ~54 GB of weights on a 24 GB L4: a plan with no KV memory and a warning on stderr
    result = run("plan", "gemma-3-27b", "--gpu", "l4", "--format", "json")
    assert result.exit_code == 0
    assert "does not fit" in result.stderr
    assert json.loads(result.stdout)["layouts"]["vllm"]["num_blocks"] == 0


def test_usage_error_exits_2():
    assert run("plan").exit_code == 2
    assert run("plan", "gemma-3-27b", "--block-size", "x").exit_code == 2


def test_mamba_hybrid_skips_no_hybrid_layout():
    result = run("plan", "bamba-9b", "--gpu", "h100", "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert "vllm-no-hybrid" in doc["skipped_layouts"]
    assert doc["layouts"]["vllm"]["block_size"] == 528  # 16 x cdiv(2,147,840, 16 x 4,096)
    assert {g["block_size"] for g in doc["layouts"]["hkv"]["groups"]} == {16}


def test_models_and_gpus():
    models = run("models", "--format", "json")
    assert models.exit_code == 0, models.stderr
    names = {m["name"] for m in json.loads(models.stdout)["models"]}
    assert len(names) == 29 and "gemma-3-27b-it" in names
    gpus = json.loads(run("gpus", "--format", "json").stdout)["gpus"]
    assert {"h100", "h200", "b200", "mi300x", "l4", "rtx5090"} <= {g["name"] for g in gpus}
