"""`hkv verify` against the real vLLM CPU engine (`.venv-vllm`) on the oracle's four tiny hybrid kinds
at three memory sizes each: 13 engine starts in all (~40 s each on this CPU), and two more
without --block-size.

hkv runs in-process (CliRunner); vLLM runs under `.venv-vllm/bin/python`. Expected figures are
hand-derived from the tiny models (tests/oracle/vllm_side/tiny_models.py):

* Gemma3: 2 KV heads x head_dim 64 x (K, V) x 4 bytes (float32) = 1,024 B per token per layer; a
  128-token block spans 2 layer slots (vLLM's groups hold at most 2 of the 2 full / 7 sliding
  layers): 262,144 B per block; 67,123,456 B // 262,144 = 256 blocks (20 MB: 76, 40 MB: 152).
* Llama4 (2 groups' worth of layer slots, same 1,024 B per token per layer) and gpt-oss (2 sliding
  / 2 full) also have 2-slot 128-token blocks of 262,144 B: 20 MB -> 76, 50,000,777 -> 190,
  80 MB -> 305, 10 MB -> 38, 33,558,527 -> 128.
* Granite hybrid: the Mamba2 state exceeds a 128-token attention page, so vLLM (and hkv) grow the
  attention block to 384 tokens: 384 x 1,024 x 2 slots = 786,432 B; 40,000,000 // 786,432 = 50
  (20 MB: 25, 80 MB: 101).

Without the oracle venv (or transformers, to save the models) every test here is skipped.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hkv.cli.verify_command as verify_command
from hkv.cli.main import app
from hkv.planner.plan import plan as real_plan

pytestmark = [pytest.mark.oracle, pytest.mark.slow]
EXTENDED = pytest.mark.extended

REPO_ROOT = Path(__file__).resolve().parents[2]
ORACLE_PY = REPO_ROOT / ".venv-vllm" / "bin" / "python"
TINY_MODELS = REPO_ROOT / "tests" / "oracle" / "vllm_side"

GEMMA3_BYTES_PER_BLOCK = 262_144  # module docstring

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    if not ORACLE_PY.exists():
        pytest.skip(f"vLLM oracle env not built ({ORACLE_PY} missing): run bash tests/oracle/setup_vllm_env.sh")
    pytest.importorskip("transformers")
    sys.path.insert(0, str(TINY_MODELS))
    try:
        import tiny_models
    finally:
        sys.path.remove(str(TINY_MODELS))
    root = tmp_path_factory.mktemp("verify_models")
    built: dict[str, Path] = {}

    def get(kind: str) -> Path:
        if kind not in built:
            built[kind] = tiny_models.build(kind, root / kind)
        return built[kind]

    return get


def _verify(model_dir: Path, options: list[str]):
    result = runner.invoke(app, ["verify", "--model", str(model_dir), "--vllm-python", str(ORACLE_PY),
                                 *options, "--format", "json"])
    assert result.exit_code in (0, 3), f"exit {result.exit_code}\n{result.stderr[-4000:]}"
    return result.exit_code, json.loads(result.stdout)


def _check(doc: dict, name: str) -> dict:
    return next(c for c in doc["checks"] if c["name"] == name)


# The tiny models are saved in float32 and the figures above are float32's; `--dtype auto` would
# run them in bfloat16 (vLLM's _resolve_auto_dtype on the CPU platform, planner/auto_dtype.py),
# so every run names float32 (verify passes it to the engine too).
FLOAT32 = ["--dtype", "float32"]


def _options(memory: int, max_model_len: int) -> list[str]:
    return ["--available-kv-memory", str(memory), "--max-model-len", str(max_model_len),
            "--max-num-batched-tokens", "128", "--block-size", "128", "--max-num-seqs", "32", *FLOAT32]


# Issue 10, item 4: hkv's planner and hkv's runtime (vLLM-compatible mode) against vLLM 0.32's
# real engine, for the oracle's four hybrid kinds at three memory sizes each. The measured
# figures are vLLM's (the oracle): its sustained N (N requests ran at once with no preemption,
# N + 1 did not) and its preemptions at N + 1; verify exits 0 only when hkv's planner and hkv's
# runtime both give that N and hkv's runtime the same preemption count.
# One memory size per kind runs by default (each is minutes of a real engine on CPU); the others
# are `extended` (`pytest -m extended tests/oracle`), as is the known gap's strict xfail twin.
@pytest.mark.parametrize("kind, max_model_len, memory, num_blocks, block_size, sustained, preemptions_after", [
    ("gemma3", 1024, 20_000_000, 76, 128, 5, 0),
    pytest.param("gemma3", 1024, 40_000_000, 152, 128, 11, 0, marks=EXTENDED),
    pytest.param("gemma3", 1024, 67_123_456, 256, 128, 20, 0, marks=EXTENDED),
    pytest.param("llama4", 2048, 20_000_000, 76, 128, 3, 0, marks=EXTENDED),
    ("llama4", 2048, 50_000_777, 190, 128, 8, 1),
    pytest.param("llama4", 2048, 80_000_000, 305, 128, 13, 1, marks=EXTENDED),
    ("gpt_oss", 1024, 10_000_000, 38, 128, 3, 0),
    pytest.param("gpt_oss", 1024, 20_000_000, 76, 128, 8, 0, marks=EXTENDED),
    pytest.param("gpt_oss", 1024, 33_558_527, 128, 128, 13, 0, marks=EXTENDED),
    pytest.param("granite_hybrid", 2048, 20_000_000, 25, 384, 2, 1, marks=[EXTENDED, pytest.mark.xfail(
        strict=True, reason="known gap, pinned in test_verify_granite_known_gap")]),
    pytest.param("granite_hybrid", 2048, 40_000_000, 50, 384, 5, 1, marks=[EXTENDED, pytest.mark.xfail(
        strict=True, reason="known gap, pinned in test_verify_granite_known_gap")]),
    ("granite_hybrid", 2048, 80_000_000, 101, 384, 10, 1),
])
def test_verify_on_tiny_models(tiny_model, kind, max_model_len, memory, num_blocks, block_size, sustained,
                               preemptions_after):
    code, doc = _verify(tiny_model(kind), _options(memory, max_model_len))
    assert (code, doc["ok"]) == (0, True), json.dumps(doc["checks"], indent=1)
    assert _check(doc, "num_blocks")["measured"] == num_blocks
    assert _check(doc, "block size")["measured"] == block_size
    assert _check(doc, "capacity line")["measured"].startswith("CPU KV cache size")
    # the CPU translation keeps T: vLLM's max_num_batched_tokens is twice hkv's 128
    assert doc["engine_args"]["max_num_batched_tokens"] == 256 and doc["engine"]["max_in_flight_tokens"] == 256
    for name in ("sustained concurrency", "sustained, hkv runtime"):
        row = _check(doc, name)
        assert (row["predicted"], row["measured"], row["ok"]) == (sustained, sustained, True), name
    row = _check(doc, f"preemptions at N = {sustained + 1}")
    assert (row["predicted"], row["measured"], row["ok"]) == (preemptions_after, preemptions_after, True)
    runs = {r["num_requests"]: r for r in doc["sustained_runs"]}
    # the measured figure is bracketed by the runs: N ran clean, N + 1 did not
    assert runs[sustained]["max_running"] == sustained and runs[sustained]["num_preemptions"] == 0
    assert runs[sustained + 1]["max_running"] < sustained + 1 or runs[sustained + 1]["num_preemptions"] > 0


@pytest.mark.parametrize("memory, sustained", [(20_000_000, 2), pytest.param(40_000_000, 5, marks=EXTENDED)])
def test_verify_granite_known_gap(tiny_model, memory, sustained):
    """Where hkv and vLLM 0.32 differ: the Granite hybrid (384-token blocks) at 20 and 40 MB. Both
    sustain the same N; with N + 1 requests vLLM admits the last one and preempts once, while hkv's
    gate keeps it waiting until the first finishes (0 preemptions): with N requests decoding
    (each 5 full-attention blocks + 1 state block per Mamba group) 8 blocks (20 MB) or 9 (40 MB)
    are free, and the gate asks 5 + 3 x 2 = 11 (per Mamba group the live state and the prefill
    checkpoint, as vLLM's align-mode code reads). A gate counting only the live state (5 + 3 = 8)
    would admit it, but then hkv preempts 31, 22 and 9 times at 20, 40 and 80 MB where vLLM
    preempts 1, 1 and 1: vLLM's Mamba manager must hold fewer blocks during prefill than hkv's
    model of it (one live state, two while a chunk crosses a state boundary). At 80 MB both say 1.
    Not resolved; pinned so a change on either side shows; verify exits 3."""
    code, doc = _verify(tiny_model("granite_hybrid"), _options(memory, 2048))
    assert (code, doc["ok"]) == (3, False)
    n = sustained + 1
    assert [c["name"] for c in doc["checks"] if c["ok"] is False] == [f"preemptions at N = {n}"]
    row = _check(doc, f"preemptions at N = {n}")
    assert (row["predicted"], row["measured"]) == (0, 1)
    assert _check(doc, "sustained concurrency")["measured"] == sustained


def test_verify_catches_a_wrong_memory_figure(tiny_model, monkeypatch):
    """vLLM gets the user's budget; hkv's planner is handed one block less: exit 3."""

    def plan_short_by_a_block(spec, cfg):
        return real_plan(spec, replace(cfg, available_kv_memory_bytes=cfg.available_kv_memory_bytes
                                       - GEMMA3_BYTES_PER_BLOCK))

    monkeypatch.setattr(verify_command, "plan", plan_short_by_a_block)
    code, doc = _verify(tiny_model("gemma3"), _options(67_123_456, 1024))
    assert code == 3 and doc["ok"] is False
    blocks = _check(doc, "num_blocks")
    assert (blocks["predicted"], blocks["measured"], blocks["ok"]) == (255, 256, False)
    assert _check(doc, "capacity line")["ok"] is False


# Issue 23, item 3: without --block-size. vLLM's CPU_ATTN runs multiples of 32 only: told 16, vLLM
# gives Gemma3's sliding layers 32-token blocks (attention.py _largest_kernel_block_within) and the
# groups end at 32, so a plan at 16 predicted 610 blocks where vLLM made 305. hkv now rounds the
# GPU plan's 16 up to 32 on CPU: 32 tokens x 1,024 B x 2 layer slots = 65,536 B per block;
# 20,000,000 // 65,536 = 305 blocks. Granite hybrid: from 32, the attention block grows in 32-token
# steps until a page covers the Mamba2 state: 9 x 32 = 288 tokens (vLLM's message says 288, and
# pads the state by 8.68 %); 288 x 1,024 x 2 = 589,824 B; 80,000,000 // 589,824 = 135 blocks.
@pytest.mark.parametrize("kind, max_model_len, memory, num_blocks, block_size", [
    ("gemma3", 1024, 20_000_000, 305, 32),
    ("granite_hybrid", 2048, 80_000_000, 135, 288),
])
def test_verify_at_the_default_block_size(tiny_model, kind, max_model_len, memory, num_blocks, block_size):
    options = ["--available-kv-memory", str(memory), "--max-model-len", str(max_model_len),
               "--max-num-batched-tokens", "128", "--max-num-seqs", "32", *FLOAT32]
    code, doc = _verify(tiny_model(kind), options)
    assert (code, doc["ok"]) == (0, True), json.dumps(doc["checks"], indent=1)
    assert all(c["ok"] is not False for c in doc["checks"])
    assert doc["engine_args"]["block_size"] == 32
    assert _check(doc, "block size")["measured"] == block_size
    assert _check(doc, "num_blocks")["measured"] == num_blocks
    assert any("CPU_ATTN runs multiples of 32" in t for t in doc["translations"])
