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


def write_config(directory, config):
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config))
    return str(directory)


LLAMA_512 = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2,
             "hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
             "vocab_size": 256, "max_position_embeddings": 512, "torch_dtype": "float32"}
# CodeGen: a causal LM hkv has no rule for, whose config lacks the standard key names.
CODEGEN = {"model_type": "codegen", "architectures": ["CodeGenForCausalLM"], "n_layer": 2, "n_embd": 64, "n_head": 4,
           "vocab_size": 256, "n_positions": 512}
BERT = {"model_type": "bert", "architectures": ["BertModel"], "num_hidden_layers": 2, "hidden_size": 64,
        "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 512}


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    root = tmp_path_factory.mktemp("configs")
    return {name: write_config(root / name, cfg) for name, cfg in
            (("llama-512", LLAMA_512), ("codegen", CODEGEN), ("bert", BERT))}


# (args, exit code, fragment of the one stderr line); args may name a config of the fixture as {name}
BAD_INPUTS = [
    (["gemma-3-72b"], 1, "gemma-3-"),  # unknown model: close matches named
    (["gemma-3-27b", "--gpu", "h1000"], 1, "did you mean h100"),
    (["gemma-3-27b", "--gpu-memory", "lots"], 1, "--gpu-memory must be a size"),
    (["gemma-3-27b", "--expected-avg-seq-len", "1.5"], 1,
     "--expected-avg-seq-len must be a positive integer"),
    (["gemma-3-27b", "--tp", "0"], 1, "--tp must be a positive integer, got 0"),
    (["gemma-3-27b", "--hkv-prefill-chunk-len", "0"], 1, "--hkv-prefill-chunk-len must be a positive integer, got 0"),
    (["gemma-3-27b", "--speculative-tokens", "-1"], 1, "--speculative-tokens must be >= 0, got -1"),
    (["gemma-3-27b", "--gpu-memory-utilization", "1.5"], 1, "--gpu-memory-utilization must be in (0, 1]"),
    (["/nonexistent/dir"], 1, "/nonexistent/dir"),
    (["{llama-512}", "--max-model-len", "100000"], 1,
     "--max-model-len 100,000 exceeds the 512 positions of {llama-512}; set HKV_ALLOW_LONG_MAX_MODEL_LEN=1"),
    (["{codegen}"], 1, "architecture CodeGenForCausalLM is not supported"),
    (["{bert}"], 1, "architecture BertModel is not a causal language model"),
    (["gemma-3-27b", "--layout", "jenga"], 2, "'jenga' is not one of"),
    (["gemma-3-27b", "--format", "xml"], 2, "'xml' is not one of"),
    (["gemma-3-27b", "--kv-cache-dtype", "int4"], 2, "'int4' is not one of"),
    (["gemma-3-27b", "--vllm-log", "old"], 2, "'old' is not one of"),
    (["gemma-3-27b", "--dtype", "float64"], 2, "'float64' is not one of"),
    (["gemma-3-27b", "--block-size", "x"], 2, "Invalid value for '--block-size'"),
    (["gemma-3-27b", "--no-such-option"], 2, "No such option"),
    ([], 2, "Missing argument"),
]


@pytest.mark.parametrize("args, code, fragment", BAD_INPUTS)
@pytest.mark.parametrize("fmt", ["human", "json"])
def test_bad_input_is_one_line_and_its_exit_code(configs, args, code, fragment, fmt):
    args = [a.format(**configs) for a in args]
    result = run("plan", "--format", fmt, *args)  # a later --format in args wins
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    if code == 1:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hkv: error: "), lines
        assert fragment.format(**configs) in lines[0]
    else:  # click's usage message ends in one "Error: ..." line
        assert result.stderr.strip().splitlines()[-1].startswith("Error: ")
        assert fragment in result.stderr.strip().splitlines()[-1]


def test_long_max_model_len_when_the_user_means_it(configs):
    result = run("plan", configs["llama-512"], "--max-model-len", "100000", "--available-kv-memory", "1GiB",
                 "--format", "json", env={"HKV_ALLOW_LONG_MAX_MODEL_LEN": "1"})
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["layouts"]["hkv"]["capacity"]["max_model_len"] == 100_000


def test_internal_error_keeps_its_traceback(monkeypatch):
    import hkv.cli.plan_command as plan_command
    from hkv.cli.errors import EXIT_INTERNAL, INTERNAL_ERROR_LINE

    def broken(*_args):
        raise ValueError("an internal bug, not bad input")

    monkeypatch.setattr(plan_command, "plan", broken)
    result = run("plan", "gemma-3-27b", "--gpu", "h100")
    assert result.exit_code == EXIT_INTERNAL == 70
    assert "Traceback" in result.stderr and "ValueError: an internal bug" in result.stderr
    assert result.stderr.strip().splitlines()[-1] == INTERNAL_ERROR_LINE


def test_debug_shows_the_traceback_of_bad_input():
    result = run("plan", "gemma-3-27b", "--tp", "0", env={"HKV_DEBUG": "1"})
    assert result.exit_code == 1
    assert "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("hkv: error: --tp")


def test_default_gpu_is_said_when_assumed():
    human = run("plan", "gemma-3-27b")
    assert human.exit_code == 0, human.stderr
    assert "hkv: no --gpu given: planned for h100 (" in human.stderr
    doc = json.loads(run("plan", "gemma-3-27b", "--format", "json").stdout)
    assert doc["assumed"]["gpu"] == "h100" and doc["assumed"]["max_num_batched_tokens"] == 8192
    chosen = run("plan", "gemma-3-27b", "--gpu", "h100", "--format", "json")
    # gemma-3-27b's 131,072-token request does not fit vLLM 0.33's estimated KV memory on an H100:
    # the one stderr line says so (planner/startup), no assumption is noted
    assert json.loads(chosen.stdout)["assumed"] == {} and "no --gpu given" not in chosen.stderr
    help_text = " ".join(run("plan", "--help").stdout.split())
    assert "[default: h100" in help_text and "[default: vLLM's for the GPU: 1024" in help_text
    assert "[default: the attention backend's, as vLLM picks it" in help_text


def test_piped_human_output_does_not_wrap_lines():
    # CliRunner's stdout is not a terminal: rich would wrap at 80 columns without COLUMNS
    result = run("plan", "gemma-3-27b", "--gpu", "h100", env={"COLUMNS": None})
    assert result.exit_code == 0, result.stderr
    log = [line for line in result.stdout.splitlines() if "log: GPU KV cache size" in line]
    assert log and all("Maximum concurrency for 131,072 tokens per request" in line for line in log)
    assert max(len(line) for line in log) > 80


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
    assert len(names) == 52 and "gemma-3-27b-it" in names and "qwen3.8-27b" in names  # 34 + issue 25's 18
    gpus = json.loads(run("gpus", "--format", "json").stdout)["gpus"]
    assert {"h100", "h200", "b200", "mi300x", "l4", "rtx5090"} <= {g["name"] for g in gpus}


@pytest.mark.parametrize("given, field, expected", [
    ({"gpu": "h200"}, "gpu", "h200"),
    ({"gpu_memory": "80GiB"}, "gpu_memory_bytes", 80 * 2**30),
    ({"gpu_memory_utilization": 0.5}, "gpu_memory_utilization", 0.5),
    ({"available_kv_memory": "1GiB"}, "available_kv_memory_bytes", 2**30),
    ({"tp": 2}, "tp", 2), ({"pp": 4}, "pp", 4), ({"block_size": 32}, "block_size", 32),
    ({"max_model_len": 4096}, "max_model_len", 4096), ({"max_num_seqs": 8}, "max_num_seqs", 8),
    ({"max_num_batched_tokens": 512}, "max_num_batched_tokens", 512),
    ({"expected_avg_seq_len": "2048"}, "expected_avg_seq_len", 2048), ({"concurrency": 3}, "concurrency", 3),
    ({"no_prefix_caching": True}, "enable_prefix_caching", False),
    ({"hkv_prefill_chunk_len": 512}, "hkv_prefill_chunk_len", 512),
    ({"speculative_tokens": 2}, "speculative_tokens", 2),
])
def test_every_plan_option_reaches_the_plan_config(given, field, expected):
    from dataclasses import fields

    from hkv.cli.plan_options import PlanOptions
    from hkv.planner.plan_config import PlanConfig

    cfg = PlanOptions(**given).plan_config()
    assert getattr(cfg, field) == expected
    untouched = {f.name for f in fields(PlanConfig)} - {field}
    assert all(getattr(cfg, name) == getattr(PlanConfig(), name) for name in untouched)


@pytest.mark.parametrize("option, choice, field", [
    ("dtype", "BF16", "dtype"), ("kv_cache_dtype", "fp8", "kv_cache_dtype"),
    ("mamba_ssm_dtype", "float32", "mamba_ssm_dtype"), ("vllm_log", "legacy", "vllm_log"),
    ("layout", "vllm", "primary_layout"),
])
def test_choice_options_reach_the_plan_config(option, choice, field):
    # through click, so the Enum conversion (case-insensitive dtypes) is part of the path
    flag = "--" + option.replace("_", "-")
    result = run("plan", "gemma-3-27b", "--gpu", "h100", flag, choice, "--format", "json")
    assert result.exit_code == 0, result.stderr
    from hkv.cli.plan_options import PlanOptions
    from hkv.cli import choices

    enum = {"dtype": choices.Dtype, "mamba_ssm_dtype": choices.Dtype, "kv_cache_dtype": choices.KvCacheDtype,
            "vllm_log": choices.VllmLog, "layout": choices.PlanLayout}[option]
    member = next(m for m in enum if m.value == choice.lower())
    assert getattr(PlanOptions(**{option: member}).plan_config(), field) == choice.lower()


def test_plan_json_carries_the_three_capacity_figures():
    result = run("plan", "gemma-3-27b", "--gpu", "h100", "--max-model-len", "8192", "--format", "json")
    assert result.exit_code == 0, result.stderr
    for name, layout in json.loads(result.stdout)["layouts"].items():
        cap = layout["capacity"]
        assert cap["logged_concurrency"] == cap["max_concurrency"]
        # Gemma-3-27B at 8k on h100 (bench_capacity.py): sustained 14, 15, 4, 4 against limits of
        # 18.19x, 18.19x, 4.84x, 18.18x. (Sustained may pass the limit slightly elsewhere: the last
        # token is never computed and prefills stagger; gpt-oss-120b at 32k: 70 vs 69.96x.)
        assert cap["sustained_concurrency"] <= cap["physical_limit_concurrency"], name
        assert cap["sustained_output_len"] == 8192 // 8
    result = run("plan", "gemma-3-27b", "--gpu", "h100", "--max-model-len", "8192", "--output-len", "8192")
    assert result.exit_code == 1
    assert result.stderr == "hkv: error: --output-len must be in [1, 8191], got 8192\n"


def test_hkv_prefill_chunk_is_the_hkv_layouts_in_flight_allowance():
    # T of the hkv layout = min(--hkv-prefill-chunk-len, max_num_batched_tokens); vLLM's stays
    # 2 x max_num_batched_tokens whatever the option says.
    for chunk, hkv_t in (("1024", 1024), ("100000", 8192)):
        result = run("plan", "gemma-3-27b", "--gpu", "h100", "--hkv-prefill-chunk-len", chunk, "--format", "json")
        assert result.exit_code == 0, result.stderr
        layouts = json.loads(result.stdout)["layouts"]
        assert (layouts["hkv"]["in_flight_tokens"], layouts["vllm"]["in_flight_tokens"]) == (hkv_t, 16384)


def test_plan_says_vllm_will_not_start_and_exits_0():
    # nemotron-3-nano-30b-a3b at 32,768 tokens on an H100: fewer state blocks than vLLM's 1,024 sequences
    args = ("plan", "nemotron-3-nano-30b-a3b", "--gpu", "h100", "--max-model-len", "32768")
    doc_run = run(*args, "--format", "json")
    assert doc_run.exit_code == 0, doc_run.stderr
    startup = json.loads(doc_run.stdout)["startup"]["vllm"]
    assert startup["starts"] is False and startup["errors"][0]["code"] == "max_num_seqs_exceeds_mamba_blocks"
    assert set(startup["errors"][0]) >= {"code", "message", "fix", "releases"}
    lines = doc_run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hkv: vllm 0.33.0 will not start: max_num_seqs (1024) exceeds")
    human = run(*args, env={"COLUMNS": "200"})
    assert human.exit_code == 0 and "✗ will not start" in human.stdout and "fix: --max-num-seqs <= " in human.stdout
    fixed = run(*args, "--max-num-seqs", "256", "--format", "json")
    assert json.loads(fixed.stdout)["startup"]["vllm"]["starts"] is True and fixed.stderr == ""
