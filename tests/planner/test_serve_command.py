"""planner/engines/vllm/serve_command.py: the `vllm serve` command of a plan's vllm layout.

Flag names are vLLM 0.32's (vllm/engine/arg_utils.py); tests/cli/test_plan_sweep_emit.py parses
the emitted argv with vLLM's own serve parser where the oracle venv exists.
"""

import json
from dataclasses import replace

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.vllm.serve_command import (
    EAGLE_DRAFT_PLACEHOLDER,
    build_vllm_serve_command,
    served_model,
)
from hkv.planner.errors import DoesNotFitError, InvalidInputError, LayoutUnavailableError
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

GIB = 2**30
CHUNKED_ENV = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"
SPECS = {name: load_model_spec(name) for name in (
    "gemma-3-27b", "llama-4-scout-17b-16e-instruct", "qwen3-next-80b-a3b", "deepseek-v3", "qwen3.5-27b")}


def serve(model, **cfg):
    return build_vllm_serve_command(plan(SPECS[model], PlanConfig(**cfg)))


def flag_value(argv, flag):
    """The word after `flag`, None when absent (a flag given twice would be a bug)."""
    assert argv.count(flag) <= 1, argv
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_gemma_exact_budget_is_kv_cache_memory_bytes():
    cmd = serve("gemma-3-27b", gpu="h100", available_kv_memory_bytes=20 * GIB, max_model_len=131072)
    # 20 GiB = 20 x 1,073,741,824 = 21,474,836,480 B. vLLM's blocks are 10 layers x 131,072 B pages =
    # 1,310,720 B: 16,384 blocks, 16,383 usable. A 131,072-token request ends holding
    # cdiv(131,071, 16) = 8,192 full-attention blocks, so two cannot both run: sustained 1 < 256.
    assert cmd.argv == ("vllm", "serve", "google/gemma-3-27b-it", "--max-model-len", "131072",
                        "--kv-cache-memory-bytes", "21474836480", "--max-num-batched-tokens", "8192",
                        "--max-num-seqs", "1")
    assert cmd.env == {}
    assert cmd.notes[0].startswith("--max-num-seqs 1: the vllm layout's sustained concurrency")


def test_llama4_chunked_local_pins_the_hybrid_manager_on():
    cmd = serve("llama-4-scout-17b-16e-instruct", gpu="h100", tp=8, max_model_len=131072)
    assert cmd.env == {CHUNKED_ENV: "1"}
    assert cmd.notes[0].startswith(f"{CHUNKED_ENV}=1: the vllm layout keeps the hybrid KV cache manager")
    assert cmd.argv[:11] == ("vllm", "serve", "meta-llama/Llama-4-Scout-17B-16E-Instruct",
                             "--max-model-len", "131072", "--tensor-parallel-size", "8",
                             "--gpu-memory-utilization", "0.92", "--max-num-batched-tokens", "8192")


@pytest.mark.parametrize("extra, env", [
    ({"vllm_version": "0.13.0"}, {CHUNKED_ENV: "0"}),  # that release's default: the manager off, as planned
    ({"vllm_version": "0.14.0"}, {CHUNKED_ENV: "1"}),
    ({"speculative_tokens": 2, "draft_layers": 1}, {}),  # EAGLE: vLLM turns the manager off whatever it says
])
def test_chunked_env_follows_what_the_vllm_layout_planned(extra, env):
    cmd = serve("llama-4-scout-17b-16e-instruct", gpu="h100", tp=8, max_model_len=131072, **extra)
    assert cmd.env == env


def test_tp_and_pp_above_one_are_given_and_one_is_left_out():
    cmd = serve("gemma-3-27b", gpu="h200", tp=2, pp=2, max_model_len=32768)
    assert (flag_value(cmd.argv, "--tensor-parallel-size"), flag_value(cmd.argv, "--pipeline-parallel-size")) \
        == ("2", "2")
    plain = serve("gemma-3-27b", gpu="h200", max_model_len=32768)
    assert "--tensor-parallel-size" not in plain.argv and "--pipeline-parallel-size" not in plain.argv


# (model, config, flag, expected value: None = absent, "" = a flag without value)
FLAGS = [
    ("gemma-3-27b", {}, "--kv-cache-dtype", None),
    ("gemma-3-27b", {"kv_cache_dtype": "fp8"}, "--kv-cache-dtype", "fp8"),
    ("gemma-3-27b", {"block_size": 16}, "--block-size", None),  # CacheConfig.DEFAULT_BLOCK_SIZE
    ("gemma-3-27b", {"block_size": 32}, "--block-size", "32"),
    ("gemma-3-27b", {"dtype": "bf16"}, "--dtype", "bfloat16"),
    ("gemma-3-27b", {"dtype": "half"}, "--dtype", "float16"),
    ("gemma-3-27b", {"gpu_memory_utilization": 0.85}, "--gpu-memory-utilization", "0.85"),
    ("gemma-3-27b", {"available_kv_memory_bytes": 8 * GIB}, "--gpu-memory-utilization", None),
    ("gemma-3-27b", {"max_num_batched_tokens": 4096}, "--max-num-batched-tokens", "4096"),
    ("gemma-3-27b", {"gpu": "b200"}, "--max-num-batched-tokens", "16384"),  # >= 160 GiB class
    ("qwen3-next-80b-a3b", {"mamba_ssm_dtype": "fp32"}, "--mamba-ssm-cache-dtype", "float32"),
    ("qwen3-next-80b-a3b", {}, "--mamba-ssm-cache-dtype", None),
]


@pytest.mark.parametrize("model, cfg, flag, expected", FLAGS)
def test_flags_given_only_where_the_plan_differs_from_vllm(model, cfg, flag, expected):
    cfg = {"gpu": "h200", "tp": 4, "max_model_len": 8192, **cfg}
    assert flag_value(serve(model, **cfg).argv, flag) == expected


# (model, vllm_version, --enable/--no-prefix-caching given, flag expected)
PREFIX = [
    ("gemma-3-27b", "0.32.0", None, None),
    ("gemma-3-27b", "0.32.0", True, None),  # attention-only: on by default in every release
    ("gemma-3-27b", "0.32.0", False, "--no-enable-prefix-caching"),
    ("qwen3-next-80b-a3b", "0.32.0", None, None),
    ("qwen3-next-80b-a3b", "0.32.0", True, None),  # hybrids: on by default from 0.26
    ("qwen3-next-80b-a3b", "0.25.0", True, "--enable-prefix-caching"),  # off before
    ("qwen3-next-80b-a3b", "0.25.0", False, None),
]


@pytest.mark.parametrize("model, version, given, expected", PREFIX)
def test_prefix_caching_flag_only_against_the_release_default(model, version, given, expected):
    argv = serve(model, gpu="h200", tp=4, max_model_len=8192, vllm_version=version,
                 enable_prefix_caching=given).argv
    flags = [w for w in argv if w.endswith("enable-prefix-caching")]
    assert flags == ([] if expected is None else [expected])


def test_older_release_notes_that_flags_are_0_33s():
    assert "flags are vLLM 0.33.0's; the plan follows vLLM 0.25.0, whose flags may differ" in serve(
        "gemma-3-27b", gpu="h200", max_model_len=8192, vllm_version="0.25.0").notes


# (model, config, the --speculative-config JSON)
SPECULATIVE = [
    ("deepseek-v3", {"speculative_tokens": 1}, {"method": "mtp", "num_speculative_tokens": 1}),  # MTP layer
    ("gemma-3-27b", {"speculative_tokens": 3, "draft_layers": 1},
     {"method": "eagle", "model": EAGLE_DRAFT_PLACEHOLDER, "num_speculative_tokens": 3}),
    ("gemma-3-27b", {"speculative_tokens": 2}, {"method": "ngram", "num_speculative_tokens": 2}),
]


@pytest.mark.parametrize("model, cfg, expected", SPECULATIVE)
def test_speculative_config_matches_the_planned_draft_layers(model, cfg, expected):
    cmd = serve(model, available_kv_memory_bytes=40 * GIB, max_model_len=8192, **cfg)
    assert json.loads(flag_value(cmd.argv, "--speculative-config")) == expected
    assert "--speculative-config" not in serve(model, available_kv_memory_bytes=40 * GIB, max_model_len=8192).argv


def test_max_num_seqs_stays_the_plans_when_more_requests_are_sustained():
    # At 4,096 tokens a request holds at most 7 groups x 256 blocks = 1,792 of the 16,383 usable
    # blocks of 20 GiB (see above): 9 such requests fit, so 4 run without a preemption.
    cmd = serve("gemma-3-27b", gpu="h100", available_kv_memory_bytes=20 * GIB, max_model_len=4096, max_num_seqs=4)
    assert flag_value(cmd.argv, "--max-num-seqs") == "4" and cmd.notes == ()


def test_long_context_needs_vllms_permission_too():
    model = replace(SPECS["gemma-3-27b"], max_model_len=8192)
    cmd = build_vllm_serve_command(plan(model, PlanConfig(gpu="h100", max_model_len=16384,
                                                          allow_long_max_model_len=True)))
    assert cmd.env == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}


# (config, error type, fragment)
REFUSED = [
    ({"gpu": "l4"}, DoesNotFitError, "emit vllm: gemma-3-27b-it does not fit"),  # 54 GB of weights, 24 GB GPU
    # 1 GiB holds 819 blocks of 1,310,720 B; one 131,072-token request needs 8,192 full-attention blocks alone
    ({"available_kv_memory_bytes": GIB}, DoesNotFitError, "emit vllm: one request of 131,072 tokens does not fit"),
    ({"gpu": "h100", "dtype": "fp8"}, InvalidInputError, "emit vllm: dtype fp8 has no vLLM name"),
    # On an H200, where the plan fits: vLLM 0.33's sampler warmup pass (+2 GiB of profile for
    # Gemma's 262,208-token vocabulary) leaves an H100 no room for a 131,072-token request.
    ({"gpu": "h200", "mamba_ssm_dtype": "float8"}, InvalidInputError, "emit vllm: mamba_ssm_dtype float8"),
]


@pytest.mark.parametrize("cfg, error, fragment", REFUSED)
def test_vllm_would_not_start_so_no_command(cfg, error, fragment):
    with pytest.raises(error) as err:
        serve("gemma-3-27b", max_model_len=131072, **cfg)
    assert fragment in str(err.value) and "emit" in err.value.fields


def test_no_vllm_layout_no_command():
    # Qwen3.5 has no vLLM model class before 0.17: the plan skips its vllm layouts.
    with pytest.raises(LayoutUnavailableError, match="emit vllm: the vllm layout does not apply"):
        serve("qwen3.5-27b", gpu="h200", max_model_len=8192, vllm_version="0.16.0")


# (source, model_id, what vllm serve is given)
MODEL_REFS = [
    ("catalog:gemma-3-27b-it", "google/gemma-3-27b-it", "google/gemma-3-27b-it"),
    ("hf-cache:/hub/models--google--gemma-3-27b-it/snapshots/abc", "google/gemma-3-27b-it", "google/gemma-3-27b-it"),
    ("/models/gemma", "google/gemma-3-27b-it", "/models/gemma"),  # the path given wins over _name_or_path
    ("/models/gemma/config.json", "", "/models/gemma"),  # vLLM loads folders
    ("models/gemma", "", "./models/gemma"),
    ("./gemma", "", "./gemma"),
    ("config.json", "", "."),
]


@pytest.mark.parametrize("source, model_id, expected", MODEL_REFS)
def test_served_model_is_the_hf_id_or_the_path_given(source, model_id, expected):
    result = plan(SPECS["gemma-3-27b"], PlanConfig(gpu="h100", max_model_len=8192))
    assert served_model(replace(result, model=replace(result.model, source=source, model_id=model_id))) == expected
