"""`hkv plan` with --gpu/--tp lists (a sweep) and with --emit vllm, through typer's CliRunner.

A sweep row is checked against `hkv plan` run for its GPU and TP alone (an independent path
through the CLI); the emitted `vllm serve` argv is parsed back by vLLM 0.32's own serve parser
where the oracle venv (.venv-vllm, see tests/oracle/README.md) exists.

Gemma-3-27B facts used by hand: 27,009,346,304 parameters x 2 B = 54,018,692,608 B of weights;
an L4 gives 23,034 MiB - 0.5 GiB = 23,616,028,672 B x 0.92 (vLLM 0.32's default utilization)
= 21,726,746,379 B, less than the weights at TP 1 and TP 2 (27,009,346,304 B per rank): the L4 rows
do not fit. An H100 (79.18 GiB x 0.92 = 78.2 GB) holds them at TP 1.
"""

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hkv.cli.main import app

runner = CliRunner()
REPO_ROOT = Path(__file__).resolve().parents[2]
ORACLE_PY = REPO_ROOT / ".venv-vllm" / "bin" / "python"
CHUNKED_ENV = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"
SWEEP_ARGS = ("gemma-3-27b", "--gpu", "h100,h200,l4", "--tp", "1,2", "--max-model-len", "32768")
CELLS = [("h100", 1), ("h100", 2), ("h200", 1), ("h200", 2), ("l4", 1), ("l4", 2)]


def run(*args, env=None):
    return runner.invoke(app, list(args), env=env)


def json_of(*args, env=None):
    result = run(*args, "--format", "json", env=env)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def sweep_doc():
    return json_of("plan", *SWEEP_ARGS)


def test_sweep_rows_equal_single_plans_run_one_by_one(sweep_doc):
    assert [(row["gpu"], row["tp"]) for row in sweep_doc["sweep"]] == CELLS
    for row in sweep_doc["sweep"]:
        single = json_of("plan", "gemma-3-27b", "--gpu", row["gpu"], "--tp", str(row["tp"]),
                         "--max-model-len", "32768")
        assert row["layouts"] == single["layouts"], (row["gpu"], row["tp"])
        assert row["budget"] == single["budget"] and row["skipped_layouts"] == single["skipped_layouts"]
        assert row["fits"] == (single["budget"]["shortfall_bytes"] == 0)


def test_sweep_json_shape_and_fits(sweep_doc):
    assert set(sweep_doc) == {"schema_version", "model", "vllm_version", "primary_layout", "sweep", "assumed"}
    assert sweep_doc["model"]["name"] == "gemma-3-27b-it" and sweep_doc["assumed"] == {}
    for row in sweep_doc["sweep"]:
        assert set(row) == {"gpu", "tp", "fits", "fit_verdict", "budget", "layouts", "skipped_layouts"}
        assert row["fit_verdict"] == row["budget"]["fit_verdict"]
        assert set(row["layouts"]) == {"hkv", "vllm", "vllm-no-hybrid", "partitioned"}
    fits = {(row["gpu"], row["tp"]): row["fits"] for row in sweep_doc["sweep"]}
    assert fits == {cell: cell[0] != "l4" for cell in CELLS}  # module docstring


def test_sweep_human_table_has_every_gpu_and_tp():
    result = run("plan", *SWEEP_ARGS, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    for gpu, tp in CELLS:
        fits = "no" if gpu == "l4" else "yes"
        assert re.search(rf"│ {gpu}\s*│\s*{tp} │ {fits}\s*│", result.stdout), (gpu, tp)
    assert result.stdout.count("short by") == 2 and "max context" in result.stdout


def test_tp_sweep_without_gpu_assumes_the_default_gpu():
    doc = json_of("plan", "gemma-3-27b", "--tp", "1,2", "--max-model-len", "8192")
    assert [(row["gpu"], row["tp"]) for row in doc["sweep"]] == [("h100", 1), ("h100", 2)]
    assert doc["assumed"]["gpu"] == "h100"


# (args after `plan gemma-3-27b`, exit code, fragment of the last stderr line)
BAD_LISTS = [
    (["--gpu", "h100,h1000"], 1, "hkv: error: unknown GPU 'h1000'; did you mean h100"),
    (["--gpu", "h100,h100-sxm"], 1, "hkv: error: --gpu lists h100 more than once"),
    (["--tp", "1,2,1"], 1, "hkv: error: --tp lists 1 more than once"),
    (["--tp", "2,0"], 1, "hkv: error: --tp must be a positive integer, got 0"),
    (["--gpu", "h100,h200", "--gpu-memory", "80GiB"], 1, "hkv: error: --gpu-memory gives every GPU the same"),
    (["--gpu", "h100,h200", "--emit", "vllm"], 1, "hkv: error: --emit vllm needs one --gpu and one --tp"),
    (["--tp", "1,2", "--emit", "vllm"], 1, "got 1 GPU(s) x 2 TP size(s)"),
    (["--gpu", "h100,,h200"], 2, "Error: Invalid value for '--gpu': 'h100,,h200' has an empty item"),
    (["--tp", "1,x"], 2, "Error: Invalid value for '--tp': '1,x' is not an integer or a comma list"),
    (["--emit", "trtllm"], 2, "'trtllm' is not one of 'vllm', 'sglang'"),
    (["--gpu", "l4", "--emit", "vllm"], 1, "hkv: error: --emit vllm: gemma-3-27b-it does not fit"),
]


@pytest.mark.parametrize("args, code, fragment", BAD_LISTS)
@pytest.mark.parametrize("fmt", ["human", "json"])
def test_bad_lists_are_one_line(args, code, fragment, fmt):
    result = run("plan", "gemma-3-27b", "--format", fmt, *args)
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert result.stdout == "" and fragment in lines[-1]
    if code == 1:
        assert len(lines) == 1


GEMMA_EXACT = ("gemma-3-27b", "--gpu", "h100", "--available-kv-memory", "20GiB", "--max-model-len", "131072")


def test_emit_vllm_gemma_exact_budget_is_a_copy_pasteable_command():
    result = run("plan", *GEMMA_EXACT, "--emit", "vllm")
    assert result.exit_code == 0, result.stderr
    # 20 GiB = 21,474,836,480 B; one 131,072-token request at a time (tests/planner/test_serve_command.py)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# --max-num-seqs 1: ") and result.stderr == ""
    assert lines[1:] == [
        "vllm serve google/gemma-3-27b-it \\",
        "  --max-model-len 131072 \\",
        "  --kv-cache-memory-bytes 21474836480 \\",
        "  --max-num-batched-tokens 8192 \\",
        "  --max-num-seqs 1",
    ]


def test_emit_vllm_llama4_sets_the_chunked_local_env_var_with_its_reason():
    result = run("plan", "llama-4-scout-17b-16e-instruct", "--gpu", "h100", "--tp", "8", "--max-model-len", "131072",
                 "--emit", "vllm")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"# {CHUNKED_ENV}=1: the vllm layout keeps the hybrid KV cache manager")
    assert (f"\n{CHUNKED_ENV}=1 \\\nvllm serve meta-llama/Llama-4-Scout-17B-16E-Instruct \\\n"
            "  --max-model-len 131072 \\\n  --tensor-parallel-size 8 \\\n") in result.stdout


def test_emit_vllm_tp_above_one():
    result = run("plan", "gemma-3-27b", "--gpu", "h100", "--tp", "2", "--max-model-len", "32768", "--emit", "vllm")
    assert result.exit_code == 0, result.stderr
    assert "  --tensor-parallel-size 2 \\\n  --gpu-memory-utilization 0.92 \\\n" in result.stdout


def test_emit_json_is_the_plan_plus_serve():
    args = ("plan", "gemma-3-27b", "--gpu", "h200", "--tp", "2", "--max-model-len", "8192", "--speculative-tokens",
            "2", "--draft-layers", "1")
    doc, plain = json_of(*args, "--emit", "vllm"), json_of(*args)
    serve = doc.pop("serve")
    assert doc == plain and set(serve) == {"argv", "env", "notes", "command"}
    assert serve["argv"][:3] == ["vllm", "serve", "google/gemma-3-27b-it"]
    # the shell text splits back into the env assignments and argv (the JSON config survives quoting)
    words = shlex.split(serve["command"].replace("\\\n", " "))
    assert words == [f"{k}={v}" for k, v in serve["env"].items()] + serve["argv"]
    assert json.loads(serve["argv"][serve["argv"].index("--speculative-config") + 1])["method"] == "eagle"


def test_single_gpu_and_tp_lists_keep_the_plain_plan():
    assert json_of("plan", "gemma-3-27b", "--gpu", "h100", "--tp", "2") == json_of(
        "plan", "gemma-3-27b", "--gpu", "h100 ", "--tp", "2")


def test_help_shows_every_options_default():
    text = run("plan", "--help", env={"COLUMNS": "300"}).stdout
    blocks = re.split(r"\n  (?=--)", text.split("Options:", 1)[1])[1:]
    assert len(blocks) > 20
    for block in blocks:
        if not block.startswith("--help"):
            assert "default:" in block, block.split()[0]


# ---- the emitted argv parsed by vLLM 0.32's own `vllm serve` parser (oracle venv) -------------

PARSE_SCRIPT = r"""
import json, os, sys
from vllm import envs
from vllm.engine import arg_utils
from vllm.engine.arg_utils import EngineArgs

# EngineArgs resolves an HF id to a local snapshot (a download, or the hub cache); the parse is
# what is checked, so keep the id as given (CI has no network and no cache).
arg_utils.get_model_path = lambda model, revision=None: model
from vllm.entrypoints.cli.serve import ServeSubcommand
from vllm.utils.argparse_utils import FlexibleArgumentParser

parser = FlexibleArgumentParser()
ServeSubcommand().subparser_init(parser.add_subparsers(dest="subparser"))
out = []
for case in json.load(sys.stdin):
    assert case["argv"][0] == "vllm", case["argv"]
    args = parser.parse_args(case["argv"][1:])
    args.model = args.model_tag  # as ServeSubcommand.cmd does
    engine = EngineArgs.from_cli_args(args)
    fields = {k: getattr(engine, k) for k in case["fields"]}
    env = {}
    for name, value in case["env"].items():
        os.environ[name] = value
        env[name] = envs.environment_variables[name]()  # KeyError: not a vLLM variable
        del os.environ[name]
    out.append({"fields": fields, "env": env})
print(json.dumps(out))
"""

# (hkv plan args, EngineArgs fields as vLLM must parse them: hand-derived from the args, None: vLLM's
# default, "sustained": the vllm layout's sustained concurrency (capped at the plan's max_num_seqs))
ORACLE_CASES = [
    (GEMMA_EXACT, {"model": "google/gemma-3-27b-it", "max_model_len": 131072, "tensor_parallel_size": 1,
                   "kv_cache_memory_bytes": 20 * 2**30, "max_num_batched_tokens": 8192, "max_num_seqs": 1,
                   "enable_prefix_caching": None, "kv_cache_dtype": "auto", "block_size": None,
                   "speculative_config": None}, {}),
    (("llama-4-scout-17b-16e-instruct", "--gpu", "h100", "--tp", "8", "--max-model-len", "131072"),
     {"model": "meta-llama/Llama-4-Scout-17B-16E-Instruct", "tensor_parallel_size": 8,
      "pipeline_parallel_size": 1, "gpu_memory_utilization": 0.92, "kv_cache_memory_bytes": None,
      "max_num_batched_tokens": 8192, "max_num_seqs": "sustained"}, {CHUNKED_ENV: True}),
    (("qwen3-next-80b-a3b", "--gpu", "h200", "--tp", "4", "--pp", "2", "--kv-cache-dtype", "fp8", "--block-size",
      "32", "--no-prefix-caching", "--mamba-ssm-dtype", "float32", "--speculative-tokens", "2",
      "--gpu-memory-utilization", "0.85", "--max-num-batched-tokens", "4096", "--max-model-len", "32768"),
     {"tensor_parallel_size": 4, "pipeline_parallel_size": 2, "kv_cache_dtype": "fp8", "block_size": 32,
      "enable_prefix_caching": False, "mamba_ssm_cache_dtype": "float32", "gpu_memory_utilization": 0.85,
      "max_num_batched_tokens": 4096, "max_model_len": 32768,
      "speculative_config": {"method": "ngram", "num_speculative_tokens": 2}}, {}),
    (("deepseek-v3", "--available-kv-memory", "40GiB", "--max-model-len", "8192", "--speculative-tokens", "1",
      "--dtype", "bf16"),
     {"model": "deepseek-ai/DeepSeek-V3", "dtype": "bfloat16", "kv_cache_memory_bytes": 40 * 2**30,
      "speculative_config": {"method": "mtp", "num_speculative_tokens": 1}}, {}),
    (("gemma-3-27b", "--available-kv-memory", "60GiB", "--max-model-len", "262144"),
     {"max_model_len": 262144}, {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": True}),
]


def _oracle_missing() -> str | None:
    if not ORACLE_PY.exists():
        return f"{ORACLE_PY} does not exist (bash tests/oracle/setup_vllm_env.sh builds it)"
    return None


@pytest.mark.oracle
@pytest.mark.skipif(_oracle_missing() is not None, reason=str(_oracle_missing()))
def test_vllms_own_parser_reads_the_emitted_command_as_planned():
    cases, expected = [], []
    for args, fields, env in ORACLE_CASES:
        doc = json_of("plan", *args, "--emit", "vllm", env={"HKV_ALLOW_LONG_MAX_MODEL_LEN": "1"})
        vllm = doc["layouts"]["vllm"]["capacity"]
        sustained = min(vllm["sustained_concurrency"], doc["budget"]["max_num_seqs"])
        fields = {k: sustained if v == "sustained" else v for k, v in fields.items()}
        cases.append({"argv": doc["serve"]["argv"], "env": doc["serve"]["env"], "fields": sorted(fields)})
        expected.append({"fields": fields, "env": env})
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "PYTHON", "VIRTUAL_ENV"))}
    # -P and cwd=/: keep the repository root (its kernels/ folder) off the oracle's sys.path.
    proc = subprocess.run([str(ORACLE_PY), "-P", "-c", PARSE_SCRIPT], input=json.dumps(cases), cwd="/",
                          env=clean_env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    parsed = json.loads(proc.stdout.strip().splitlines()[-1])
    for (args, _, _), got, want in zip(ORACLE_CASES, parsed, expected, strict=True):
        assert got == want, args
