"""`hkv explain-log` on start-up logs written here from vLLM's own format strings, both formats.

Current format (vLLM 0.28+; the one-line capacity message of vllm/v1/core/kv_cache_utils.py and
`format_gib` = round(GiB, 2) of gpu_worker.py); legacy (vLLM 0.20.0 and before: two lines, the
budget as "%.2f GiB"). Every logged number below is derived by hand in the comments (bytes per
token x layers, groups, blocks per request), not taken from hkv.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.cli.main import app
from hkv.cli.render_log_budget import render_log_budget
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.vllm.log import read_vllm_log
from hkv.planner.engines.vllm.log_budget_terms import compare_budget
from rich.console import Console
from typer.testing import CliRunner

runner = CliRunner()
PREFIX = "(EngineCore_DP0 pid=7) INFO 11-23 10:00:31 [kv_cache_utils.py:2328] "


def current_log(version, args, gib, tokens, length, conc, *extra):
    return "\n".join([
        f"(APIServer pid=1) INFO 11-23 10:00:00 [api_utils.py:327] vLLM server version {version}, serving model "
        f"{args['model']}",
        f"(APIServer pid=1) INFO 11-23 10:00:00 [api_utils.py:286] non-default args: {args!r}",
        *[PREFIX + line for line in extra],
        f"(EngineCore_DP0 pid=7) INFO 11-23 10:00:30 [gpu_worker.py:760] Available KV cache memory: {gib} GiB",
        PREFIX + f"GPU KV cache size: {tokens:,} tokens, Maximum concurrency for {length:,} tokens per request: "
                 f"{conc}x",
    ]) + "\n"


def legacy_log(version, args, gib, tokens, length, conc, *extra):
    return "\n".join([
        *([f"INFO 11-23 10:00:00 [api_server.py:1896] vLLM API server version {version}"] if version else []),
        f"INFO 11-23 10:00:00 [utils.py:233] non-default args: {args!r}",
        *[PREFIX + line for line in extra],
        f"(EngineCore_DP0 pid=7) INFO 11-23 10:00:30 [gpu_worker.py:376] Available KV cache memory: {gib} GiB",
        PREFIX + f"GPU KV cache size: {tokens:,} tokens",
        PREFIX + f"Maximum concurrency for {length:,} tokens per request: {conc}x",
    ]) + "\n"


CHUNKED_WARNING = ("There is a latency regression when using chunked local attention with the hybrid KV cache "
                   "manager. Disabling it, by default. To enable it, set the environment "
                   "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1.")
GEMMA_PADDING = "Add 8 padding layers, may waste at most 15.38% KV cache memory"
BAMBA_LINES = ("Setting attention block size to 528 tokens to ensure that attention page size is >= mamba page size.",
               "Padding mamba page size by 0.69% to ensure that mamba page size and attention page size are "
               "exactly equal.",
               "Add 1 padding layers, may waste at most 3.45% KV cache memory")
LLAMA = {"model": "meta-llama/Llama-3.1-8B-Instruct", "max_model_len": 8192, "max_num_batched_tokens": 8192}
GEMMA = {"model": "google/gemma-3-27b-it", "max_model_len": 32768, "max_num_batched_tokens": 8192}
SCOUT = {"model": "meta-llama/Llama-4-Scout-17B-16E-Instruct", "max_model_len": 1048576,
         "tensor_parallel_size": 8, "max_num_batched_tokens": 8192}
BAMBA = {"model": "ibm-ai-platform/Bamba-9B", "max_model_len": 8192, "max_num_batched_tokens": 8192}

# (case, log text, vLLM version hkv must use, layout, checks that must be there)
LOGS = [
    # Llama-3.1-8B, full attention: 32 layers x 8 KV heads x 128 x (K, V) x 2 B = 131,072 B per token;
    # a 16-token block 2 MiB; 10 GiB = 5,120 blocks; a request of 8,192 tokens holds 512:
    # 5,120 / 512 = 10.00x; tokens int(10 x 8,192) = 81,920 = (legacy) 5,120 // 1 group x 16.
    ("full, current", current_log("0.32.0", LLAMA, "10.0", 81_920, 8192, "10.00"), "0.32.0", "vllm", 3),
    ("full, legacy", legacy_log("0.20.0", LLAMA, "10.00", 81_920, 8192, "10.00"), "0.20.0", "vllm", 3),
    # Gemma-3-27B, sliding (W 1,024) + full: 16 KV heads x 128 x 2 x 2 B = 8,192 B per token per layer;
    # page 131,072 B; groups of 10 (the 10 full layers): 1 full + 6 sliding (5 x 10 + 1 x 2: 8 padding
    # layers, 8 / 52 = 15.38%); 10 slots = 1,310,720 B per block; 20 GiB = 16,384 blocks.
    # Current (T = 2 x 8,192): full 2,048 + 6 x (cdiv(1,023 + 16,384, 16) + 1 = 1,089) = 8,582 blocks
    # per request: 16,384 / 8,582 = 1.91x, int(1.9091 x 32,768) = 62,557 tokens.
    ("sliding + full, current",
     current_log("0.32.0", GEMMA, "20.0", 62_557, 32768, "1.91", GEMMA_PADDING), "0.32.0", "vllm", 4),
    # Legacy (T = 8,192 before 0.26): 2,048 + 6 x (cdiv(9,215, 16) + 1 = 577) = 5,510: 2.97x;
    # tokens 16,384 // 7 groups x 16 = 37,440.
    ("sliding + full, legacy",
     legacy_log("0.20.0", GEMMA, "20.00", 37_440, 32768, "2.97", GEMMA_PADDING), "0.20.0", "vllm", 4),
    # Llama-4-Scout at TP 8, hybrid manager off (vLLM's default for chunked local attention): every
    # layer full, 1 KV head x 128 x 2 x 2 B = 512 B per token per layer; 48 layers x 16 tokens x 512 B
    # = 393,216 B per block; 60 GiB = 163,840 blocks; cdiv(1,048,576, 16) = 65,536 per request:
    # 2.50x, 2,621,440 tokens (both formulas).
    ("chunked + full, hybrid off, current",
     current_log("0.32.0", SCOUT, "60.0", 2_621_440, 1048576, "2.50", CHUNKED_WARNING), "0.32.0",
     "vllm-no-hybrid", 4),
    ("chunked + full, hybrid off, legacy",
     legacy_log("0.13.0", SCOUT, "60.00", 2_621_440, 1048576, "2.50", CHUNKED_WARNING), "0.13.0",
     "vllm-no-hybrid", 4),
    # Hybrid manager on (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1): groups of 12, 3 chunked
    # (C 8,192) + 1 full, 12 slots x 8,192 B = 98,304 B per block; 60 GiB = 655,360 blocks. Current
    # (T 16,384): 65,536 + 3 x cdiv(8,192 + 16,384, 16) = 70,144 per request: 9.34x, 9,796,914 tokens.
    ("chunked + full, hybrid on, current",
     current_log("0.32.0", SCOUT, "60.0", 9_796_914, 1048576, "9.34"), "0.32.0", "vllm", 3),
    # Legacy 0.17 (T 8,192): 65,536 + 3 x 1,024 = 68,608: 9.55x; tokens 655,360 // 4 x 16 = 2,621,440.
    ("chunked + full, hybrid on, legacy",
     legacy_log("0.17.0", SCOUT, "60.00", 2_621_440, 1048576, "9.55"), "0.17.0", "vllm", 3),
    # Bamba-9B, Mamba2 + full: state 2,147,840 B (conv 3 x 8,448 + ssm 128 x 64 x 128, bf16); attention
    # 8 KV heads x 128 x 2 x 2 B = 4,096 B per token: cdiv(2,147,840 / 4,096) = 525 -> 528 (kernel
    # blocks of 16); page 2,162,688 B, padding (2,162,688 - 2,147,840) / 2,147,840 = 0.69%. Groups of 3
    # (the 3 attention layers): 29 Mamba layers in 10 groups, 1 padding layer (1 / 29 = 3.45%); 3
    # slots = 6,488,064 B per block; 30 GiB = 4,964 blocks. Current (prefix caching on, Mamba2 align:
    # 3 state blocks per group): cdiv(8,192, 528) = 16 + 10 x 3 = 46: 107.91x, 884,023 tokens.
    ("mamba hybrid, current",
     current_log("0.32.0", BAMBA, "30.0", 884_023, 8192, "107.91", *BAMBA_LINES), "0.32.0", "vllm", 6),
    # Legacy 0.20 (prefix caching off for hybrids before 0.26: one state block): 16 + 10 = 26: 190.92x;
    # tokens 4,964 // 11 groups x 528 = 238,128.
    ("mamba hybrid, legacy",
     legacy_log("0.20.0", BAMBA, "30.00", 238_128, 8192, "190.92", *BAMBA_LINES), "0.20.0", "vllm", 6),
]


def explain(tmp_path, text, *options):
    path = tmp_path / "vllm.log"
    path.write_text(text)
    return runner.invoke(app, ["explain-log", str(path), *options, "--format", "json"])


@pytest.mark.parametrize("case, text, version, layout, num_checks", LOGS, ids=[c[0] for c in LOGS])
def test_every_logged_number_is_reproduced(tmp_path, case, text, version, layout, num_checks):
    result = explain(tmp_path, text)
    assert result.exit_code == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["vllm_version"] == version and doc["layout"] == layout
    assert len(doc["checks"]) == num_checks and all(c["ok"] for c in doc["checks"])
    assert all(set(c) == {"name", "logged", "reproduced", "ok"} for c in doc["checks"])
    lo, hi = doc["reproducing_budget_bytes"]
    band_lo, band_hi = doc["budget_band_bytes"]
    assert band_lo <= lo <= hi <= band_hi
    assert doc["reasons"]


def test_human_output_marks_each_number(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_text(LOGS[2][1])
    result = runner.invoke(app, ["explain-log", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("✓") == 4 and "explained: yes" in result.stdout
    assert "8 slot(s) stay empty" in result.stdout and "T = 16,384 tokens" in result.stdout


def test_version_inferred_from_the_numbers(tmp_path):
    """No version line: two lines whose token count is not int(concurrency x length) (37,440 vs
    int(2.97 x 32,768) = 97,320) can only be the block-count formula of vLLM 0.20.0 and before."""
    result = explain(tmp_path, legacy_log(None, GEMMA, "20.00", 37_440, 32768, "2.97", GEMMA_PADDING))
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["vllm_version"] == "0.20.0"
    assert doc["vllm_version_source"] == "inferred from the numbers"


def test_a_wrong_number_is_caught(tmp_path):
    result = explain(tmp_path, current_log("0.32.0", LLAMA, "10.0", 81_921, 8192, "10.00"))
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert doc["ok"] is False
    bad = [c for c in doc["checks"] if not c["ok"]]
    assert [c["name"] for c in bad] == ["KV cache size (tokens)"] and bad[0]["logged"] == "81,921"
    assert result.stderr.strip().splitlines()[-1] == "hkv: 1 logged number(s) not reproduced: KV cache size (tokens)"


def test_public_scout_numbers_are_the_hybrid_managers(tmp_path):
    """The Llama-4-Scout figures the issue quotes (8 x H200, 5,242,880 tokens: 3,919,664 tokens and
    2.96x beside the chunked-local warning) are the hybrid manager's: 4 groups of 12, 98,304 B per
    block, 979,916 blocks (3,919,664 = 979,916 // 4 x 16), 327,680 + 3 x 1,024 = 330,752 per request
    = 2.96x. Off, every layer counts in full: 0.75x. So the warning came from another start."""
    log = legacy_log("0.17.0", {"model": "meta-llama/Llama-4-Scout-17B-16E-Instruct", "max_model_len": 5242880,
                                "tensor_parallel_size": 8, "max_num_batched_tokens": 8192},
                     "89.71", 3_919_664, 5242880, "2.96", CHUNKED_WARNING)
    result = explain(tmp_path, log)
    doc = json.loads(result.stdout)
    assert result.exit_code == 3 and doc["layout"] == "vllm"
    assert [c["name"] for c in doc["checks"] if not c["ok"]] == ["hybrid KV cache manager"]
    assert "hybrid KV cache manager ON" in doc["reasons"][0] and "0.75x" in doc["reasons"][0]


def test_options_fill_in_what_the_log_lacks(tmp_path):
    """A paste of the capacity line only: the budget and the model come from the options."""
    line = PREFIX + "GPU KV cache size: 81,920 tokens, Maximum concurrency for 8,192 tokens per request: 10.00x\n"
    result = explain(tmp_path, line, "--model", "llama-3.1-8b-instruct", "--available-kv-memory", "10GiB",
                     "--max-num-batched-tokens", "8192")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["ok"] and doc["budget_band_bytes"] == [10 * 2**30, 10 * 2**30]


@pytest.mark.parametrize("text, options, message", [
    ("hello\n", (), "holds none of vLLM's start-up lines"),
    (PREFIX + "GPU KV cache size: 81,920 tokens, Maximum concurrency for 8,192 tokens per request: 10.00x\n",
     ("--model", "llama-3.1-8b-instruct"),
     "no 'Available KV cache memory' line in the log: pass --available-kv-memory"),
    (PREFIX + "GPU KV cache size: 81,920 tokens, Maximum concurrency for 8,192 tokens per request: 10.00x\n",
     (), "the log names no model"),
    (current_log("0.9.2", LLAMA, "10.0", 81_920, 8192, "10.00"), (), "the log is from vLLM 0.9.2; hkv models 0.10.0"),
    (current_log("0.32.0", {**LLAMA, "model": "no/such-model"}, "10.0", 1, 8192, "1.00"), (),
     "'no/such-model' is not a catalog name"),
])
def test_bad_or_partial_logs_give_one_line(tmp_path, text, options, message):
    result = explain(tmp_path, text, *options)
    assert result.exit_code == 1, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and result.stdout == ""


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.log", "no such log file"),
    (lambda p: p, "is a directory"),
])
def test_bad_paths(tmp_path, make, message):
    result = runner.invoke(app, ["explain-log", str(make(tmp_path))])
    assert result.exit_code == 1 and message in result.stderr and result.stdout == ""


def test_reads_standard_input():
    result = runner.invoke(app, ["explain-log", "-", "--format", "json"], input=LOGS[0][1])
    assert result.exit_code == 0 and json.loads(result.stdout)["ok"] is True


# A real start-up: Qwen3-Next-80B-A3B at TP 2 on two H200s, vLLM 0.10.2 (record
# r010_qwen3next_80b_2xh200_v0102 of shared/data/vllm_memory_logs/records.jsonl, its lines verbatim).
R010_LINES = [
    "(APIServer pid=1804347) INFO 10-23 15:10:10 [api_server.py:1896] vLLM API server version 0.10.2",
    "(APIServer pid=1804347) INFO 10-23 15:10:10 [utils.py:328] non-default args: {'host': '0.0.0.0', 'model': "
    "'/data/models/Qwen3-Next-80B-A3B-Instruct', 'tensor_parallel_size': 2}",
    "(APIServer pid=1804347) INFO 10-23 15:10:22 [config.py:390] Setting attention block size to 544 tokens to ensure "
    "that attention page size is >= mamba page size.",
    "(APIServer pid=1804347) INFO 10-23 15:10:22 [config.py:411] Padding mamba page size by 1.49% to ensure that mamba "
    "page size and attention page size are exactly equal.",
    "(Worker_TP0 pid=1806413) INFO 10-23 15:14:18 [gpu_model_runner.py:2392] Model loading took 74.2812 GiB and "
    "215.831224 seconds",
    "(Worker_TP0 pid=1806413) INFO 10-23 15:14:30 [gpu_worker.py:298] Available KV cache memory: 44.59 GiB",
    "(EngineCore_DP0 pid=1805889) INFO 10-23 15:14:30 [kv_cache_utils.py:1028] GPU KV cache size: 973,760 tokens",
    "(EngineCore_DP0 pid=1805889) INFO 10-23 15:14:30 [kv_cache_utils.py:1032] Maximum concurrency for 262,144 tokens "
    "per request: 14.77x",
    "(Worker_TP1 pid=1806414) INFO 10-23 15:14:56 [gpu_model_runner.py:3118] Graph capturing finished in 25 secs, took "
    "2.37 GiB",
    "(Worker_TP1 pid=1806414) INFO 10-23 15:14:56 [gpu_worker.py:391] Free memory on device (139.21/139.81 GiB) on "
    "startup. Desired GPU memory utilization is (0.9, 125.83 GiB). Actual usage is 74.28 GiB for weight, 5.58 GiB for "
    "peak activation, 1.38 GiB for non-torch memory, and 2.37 GiB for CUDAGraph memory. Replace "
    "gpu_memory_utilization config with `--kv-cache-memory=45175492096` to fit into requested memory, or "
    "`--kv-cache-memory=59540753920` to fully utilize gpu memory. Current kv cache memory in use is 47878721024 "
    "bytes.",
]
QWEN3_NEXT = str(Path(__file__).resolve().parents[1] / "data" / "vllm_startups" / "configs" /
                 "qwen3-next-80b-a3b-instruct.json")


def test_real_log_term_by_term_json(tmp_path):
    """Each logged memory term next to hkv's blind one; the log's arithmetic (125.83 - 74.2812 -
    5.58 - 1.38 = 44.59, graph estimate not subtracted in 0.10.2) adds up; no anomaly (0.60 GiB in
    use at start-up, under 1 GiB). The checks and their keys stay as they were."""
    result = explain(tmp_path, "\n".join(R010_LINES) + "\n", "--model", QWEN3_NEXT)
    assert result.exit_code == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert {"checks", "reasons", "plan", "inputs", "budget_band_bytes", "vllm_version"} <= set(doc)
    assert doc["ok"] is True and doc["vllm_version"] == "0.10.2"
    rows = {row["name"]: row for row in doc["budget_terms"]}
    assert [rows[name]["logged"] for name in ("GPU total", "requested (total x utilization)", "weights",
                                              "activation peak", "non-torch", "available KV cache memory")] == \
        ["139.81 GiB", "125.83 GiB", "74.2812 GiB", "5.58 GiB", "1.38 GiB", "44.59 GiB"]
    assert rows["GPU total"]["source"] == "GPU table: h200" and rows["GPU total"]["inside_band"] is True
    assert all(set(row) == {"name", "logged", "logged_bytes", "logged_band_bytes", "hkv_bytes", "hkv_band_bytes",
                            "difference_bytes", "source", "inside_band", "note"} for row in doc["budget_terms"])
    assert doc["budget_accounting"]["adds_up"] is True
    assert doc["budget_accounting"]["matching_rules"] == ["graph estimate not subtracted"]
    assert doc["anomalies"] == [] and doc["budget_config"]["gpu"] == "h200"


def test_real_log_term_by_term_table(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(R010_LINES) + "\n")
    result = runner.invoke(app, ["explain-log", str(path), "--model", QWEN3_NEXT], env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.stderr
    assert "memory budget, term by term" in result.stdout and "74.2812 GiB" in result.stdout
    assert "vLLM's arithmetic (adds up)" in result.stdout and result.stdout.count("✓") == 5


def test_anomalies_in_json(tmp_path):
    """LoRA in the args and a connector line: both named; exit 0, they never fail the checks."""
    lora_args = {**LLAMA, "enable_lora": True, "max_loras": 2}
    log = current_log("0.32.0", lora_args, "10.0", 81_920, 8192, "10.00",
                      "Creating v1 connector with name: NixlConnector and engine_id: 1f2e")
    result = explain(tmp_path, log)
    assert result.exit_code == 0, result.stderr
    anomalies = {a["name"]: a["text"] for a in json.loads(result.stdout)["anomalies"]}
    assert set(anomalies) == {"lora", "kv_connector"} and "max_loras 2" in anomalies["lora"]
    assert "NixlConnector" in anomalies["kv_connector"]


def test_a_mismatch_is_printed_for_people():
    """A wrong hkv term (weights forced to 60 GiB, exact: "given") is named under the table."""
    log = read_vllm_log(R010_LINES)
    comparison = compare_budget(log, load_model_spec(QWEN3_NEXT), {"weights_bytes": 60 * 2**30}, "0.10.2")
    console = Console(record=True, width=200)
    render_log_budget(comparison, (), console)
    text = console.export_text()
    assert "memory budget, term by term" in text and "OUTSIDE" in text
    assert "outside hkv's band: weights logged 74.2812 GiB, hkv 60.00 GiB (given" in text
