"""build_sglang_launch_command: which flags a plan's server arguments and pools turn into, written
out by hand from SGLang 0.5.23's flag names (srt/arg_groups/fields/*.py); and, where the SGLang
oracle venv (.venv-sglang) is built, SGLang's own argument parser reads the command back to the
same values."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hkv.planner.engines.sglang.launch_command import (
    EAGLE_DRAFT_PLACEHOLDER,
    PROGRAM,
    build_sglang_launch_command,
)
from hkv.planner.engines.sglang.pools import SglangPools
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.errors import DoesNotFitError

REPO_ROOT = Path(__file__).resolve().parents[4]
SGLANG_PY = REPO_ROOT / ".venv-sglang" / "bin" / "python"
HARNESS_DIR = REPO_ROOT / "tests" / "oracle" / "sglang_side"
MODEL = "openai/gpt-oss-120b"


def pools(mfs: float = 0.83, tokens: int = 375360, requests: int = 2048) -> SglangPools:
    return SglangPools(mem_fraction_static=mfs, available_bytes=20 * 2**30, max_total_num_tokens=tokens,
                       swa_tokens=300288, max_mamba_cache_size=None, max_running_requests=requests,
                       context_len=131072, page_size=1)


def flags(args: SglangServerArgs, mfs: float = 0.83) -> tuple[str, ...]:
    argv = build_sglang_launch_command(MODEL, args, pools(mfs)).argv
    assert argv[:3] == PROGRAM == ("python3", "-m", "sglang.launch_server")
    return argv[3:]


BASE = ("--model-path", MODEL, "--mem-fraction-static", "0.83")


@pytest.mark.parametrize(("args", "expected"), [
    # SGLang's defaults: only the model and the pinned fraction
    (SglangServerArgs(), BASE),
    (SglangServerArgs(tp_size=4, context_length=32768),
     BASE + ("--tp-size", "4", "--context-length", "32768")),
    (SglangServerArgs(pp_size=2, chunked_prefill_size=4096, cuda_graph_max_bs=64, page_size=64),
     BASE + ("--pp-size", "2", "--chunked-prefill-size", "4096", "--cuda-graph-max-bs-decode", "64",
             "--page-size", "64")),
    # hkv's "fp8" is SGLang's fp8_e4m3; a name SGLang already knows passes through
    (SglangServerArgs(kv_cache_dtype="fp8"), BASE + ("--kv-cache-dtype", "fp8_e4m3")),
    (SglangServerArgs(kv_cache_dtype="fp8_e5m2"), BASE + ("--kv-cache-dtype", "fp8_e5m2")),
    (SglangServerArgs(swa_full_tokens_ratio=0.5, disable_radix_cache=True),
     BASE + ("--swa-full-tokens-ratio", "0.5", "--disable-radix-cache")),
    (SglangServerArgs(mamba_full_memory_ratio=0.75, max_mamba_cache_size=47, max_running_requests=9,
                      mamba_ssm_dtype="bfloat16"),
     BASE + ("--max-running-requests", "9", "--mamba-full-memory-ratio", "0.75", "--max-mamba-cache-size", "47",
             "--mamba-ssm-dtype", "bfloat16")),
    (SglangServerArgs(speculative_algorithm="NEXTN", speculative_num_steps=3, speculative_eagle_topk=1,
                      speculative_num_draft_tokens=4),
     BASE + ("--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
             "--speculative-num-draft-tokens", "4")),
    (SglangServerArgs(speculative_algorithm="EAGLE3"),
     BASE + ("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", EAGLE_DRAFT_PLACEHOLDER)),
    # the version is hkv's own, never a flag
    (SglangServerArgs(version="0.5.9"), BASE),
])
def test_flags(args, expected):
    assert flags(args) == expected


def test_mem_fraction_is_written_exactly():
    # a model-specific fraction (0.7676 for Qwen3.5 multimodal) must not be rounded by the formatting
    assert flags(SglangServerArgs(), mfs=0.7676)[2:4] == ("--mem-fraction-static", "0.7676")


def test_notes_say_why_and_which_release():
    notes = build_sglang_launch_command(MODEL, SglangServerArgs(version="0.5.9"), pools()).notes
    assert notes[0].startswith("--mem-fraction-static 0.83: ")
    assert any("SGLang 0.5.9" in n and "0.5.23" in n for n in notes)


@pytest.mark.parametrize(("tokens", "requests"), [(0, 2048), (375360, 0)])
def test_refuses_when_sglang_would_not_start(tokens, requests):
    with pytest.raises(DoesNotFitError, match="SGLang would refuse to start"):
        build_sglang_launch_command(MODEL, SglangServerArgs(), pools(tokens=tokens, requests=requests))


_PARSE = """
import argparse, json, sys
sys.path.insert(0, sys.argv[3])
from sglang_harness import define_torchvision_op_schemas
define_torchvision_op_schemas()  # the oracle venv's torchvision beside CPU torch (tests/oracle/sglang_side)
from sglang.srt.server_args import ServerArgs
parser = argparse.ArgumentParser()
ServerArgs.add_cli_args(parser)
ns = parser.parse_args(json.loads(sys.argv[1]))
print(json.dumps({k: getattr(ns, k) for k in json.loads(sys.argv[2])}))
"""


def _sglang_ready() -> str | None:
    """None when the oracle venv imports SGLang's ServerArgs, else why not."""
    if not SGLANG_PY.exists():
        return f"{SGLANG_PY} does not exist"
    probe = subprocess.run([str(SGLANG_PY), "-P", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                            "from sglang_harness import define_torchvision_op_schemas as d; d(); "
                            "import sglang.srt.server_args", str(HARNESS_DIR)],
                           cwd="/", capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        return f"import sglang.srt.server_args fails there: {probe.stderr.strip().splitlines()[-1:]}"
    return None


def test_sglang_own_parser_reads_the_command_back():
    why = _sglang_ready()
    if why:
        pytest.skip(f"SGLang oracle venv not usable ({why})")
    args = SglangServerArgs(tp_size=2, context_length=32768, kv_cache_dtype="fp8", chunked_prefill_size=4096,
                            cuda_graph_max_bs=64, page_size=16, swa_full_tokens_ratio=0.5, disable_radix_cache=True,
                            mamba_full_memory_ratio=0.75, max_mamba_cache_size=47, max_running_requests=9,
                            speculative_algorithm="NEXTN", speculative_num_steps=3)
    argv = list(build_sglang_launch_command(MODEL, args, pools(mfs=0.7676)).argv[3:])
    expected = {"model_path": MODEL, "mem_fraction_static": 0.7676, "tp_size": 2, "context_length": 32768,
                "kv_cache_dtype": "fp8_e4m3", "chunked_prefill_size": 4096, "cuda_graph_max_bs_decode": 64,
                "page_size": 16, "swa_full_tokens_ratio": 0.5, "disable_radix_cache": True,
                "mamba_full_memory_ratio": 0.75, "max_mamba_cache_size": 47, "max_running_requests": 9,
                "speculative_algorithm": "NEXTN", "speculative_num_steps": 3}
    proc = subprocess.run([str(SGLANG_PY), "-P", "-c", _PARSE, json.dumps(argv), json.dumps(list(expected)),
                           str(HARNESS_DIR)],
                          cwd="/", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == expected


def test_a_pool_shorter_than_the_context_is_said():
    # tp_worker.py: max_req_len = min(context_len - 1, kv_capacity - 1); inputs up to max_req_len - 5
    notes = build_sglang_launch_command(MODEL, SglangServerArgs(), pools(tokens=18047)).notes
    assert any("holds 18,047 tokens, fewer than the context length 131,072" in n and "18,041 input tokens" in n
               for n in notes)
