"""`hkv verify` pieces that need no vLLM: the start-up log parser, the sustained search, the engine
settings' platform translations, and the error when no interpreter can import vLLM (exit 1).
The real engine runs in tests/oracle/test_verify_engine.py."""

import importlib.util
import sys

import pytest
from typer.testing import CliRunner

from hkv.cli.main import app
from hkv.runtime.verify.sustained_search import SustainedSearch, search_sustained
from hkv.runtime.verify.verify_checks import _measurement_limit
from hkv.runtime.verify.vllm_engine_args import engine_settings
from hkv.runtime.verify.vllm_startup_log import parse_startup_log
from hkv.planner.budget.memory_budget import MemoryBudget
from hkv.planner.plan_config import PlanConfig

runner = CliRunner()

# Lines as vLLM 0.32's CPU engine printed them for the oracle's tiny Granite hybrid (abridged; prefixes as logged).
GRANITE_LOG = [
    "(EngineCore pid=41) INFO 11-23 21:00:01 [interface.py:1102] Setting attention block size to 384 tokens "
    "to ensure that attention page size is >= mamba page size.",
    "(EngineCore pid=41) INFO 11-23 21:00:01 [interface.py:1117] Padding mamba page size by 44.91% to ensure "
    "that mamba page size and attention page size are exactly equal.",
    "INFO 11-23 21:00:02 [llm.py:300] Supported tasks: ['generate']",
    "(EngineCore pid=41) INFO 11-23 21:00:05 [kv_cache_utils.py:2330] CPU KV cache size: 19,200 tokens, "
    "Maximum concurrency for 2,048 tokens per request: 9.38x",
]


@pytest.mark.parametrize("lines, capacity_line, notes", [
    (GRANITE_LOG,
     "CPU KV cache size: 19,200 tokens, Maximum concurrency for 2,048 tokens per request: 9.38x",
     ("Padding mamba page size by 44.91% to ensure that mamba page size and attention page size are "
      "exactly equal.",
      "Setting attention block size to 384 tokens to ensure that attention page size is >= mamba page size.")),
    (["INFO 11-23 21:00:05 [kv_cache_utils.py:2330] GPU KV cache size: 1,000 tokens, Maximum concurrency "
      "for 500 tokens per request: 2.00x",
      "(EngineCore pid=7) WARNING 11-23 21:00:05 [kv_cache_utils.py:900] Add 1 padding layers, may waste at "
      "most 14.29% KV cache memory"],
     "GPU KV cache size: 1,000 tokens, Maximum concurrency for 500 tokens per request: 2.00x",
     ("Add 1 padding layers, may waste at most 14.29% KV cache memory",)),
    (["INFO 11-23 21:00:02 [llm.py:300] Supported tasks: ['generate']"], None, ()),
])
def test_parse_startup_log(lines, capacity_line, notes):
    log = parse_startup_log(lines)
    assert log.capacity_line == capacity_line
    assert log.notes == notes


@pytest.mark.parametrize("true_sustained, hint, max_requests, expected_trials", [
    (5, 5, 256, [(5, True), (6, False)]),  # a right prediction costs two runs
    (8, 5, 256, [(5, True), (6, True), (8, True), (12, False), (10, False), (9, False)]),  # gallop up, bisect
    (3, 5, 256, [(5, False), (4, False), (2, True), (3, True)]),  # gallop down, bisect
    (0, 1, 256, [(1, False)]),  # one request alone is not clean
    (300, 250, 256, [(250, True), (251, True), (253, True), (256, True)]),  # capped by max_num_seqs
])
def test_search_sustained(true_sustained, hint, max_requests, expected_trials):
    search = search_sustained(lambda n: n <= true_sustained, hint, max_requests)
    assert search.sustained == min(true_sustained, max_requests)
    assert search.capped == (true_sustained >= max_requests)
    assert list(search.trials) == expected_trials


def _budget(available_bytes: int, max_num_batched_tokens: int) -> MemoryBudget:
    return MemoryBudget(device="custom", total_bytes=0, gpu_memory_utilization=0.9, weights_bytes=0,
                        activation_bytes=0, cudagraph_bytes=0, non_torch_bytes=0,
                        available_bytes=available_bytes, max_num_batched_tokens=max_num_batched_tokens,
                        exact=True)


@pytest.mark.parametrize("device_type, vllm_mnbt, device_name, num_translations", [
    ("cuda", 256, "GPU", 1),  # only the dtype: hkv's auto named for vLLM
    ("cpu", 512, "CPU", 4),  # + synchronous scheduling (T = 1 x mnbt), block size, log word
])
def test_engine_settings_translate_the_platform(device_type, vllm_mnbt, device_name, num_translations):
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=67_123_456, block_size=128, max_num_batched_tokens=256)
    settings = engine_settings("/m", 4, cfg, _budget(67_123_456, 256), 1024, device_type)
    args = settings.llm_args
    assert args["max_num_batched_tokens"] == vllm_mnbt
    assert (args["kv_cache_memory_bytes"], args["block_size"], args["max_model_len"]) == (67_123_456, 128, 1024)
    assert args["dtype"] == "float32" and args["disable_log_stats"] is False
    assert settings.device_name == device_name
    assert len(settings.translations) == num_translations


def test_explicit_dtype_passes_through_untranslated():
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=1 << 20, dtype="bf16")
    settings = engine_settings("/m", 4, cfg, _budget(1 << 20, 256), 1024, "cuda")
    assert settings.llm_args["dtype"] == "bfloat16" and settings.translations == ()


VERIFY = ["verify", "--model", "gemma-3-27b", "--available-kv-memory", "1GiB"]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="this Python can import vllm")
def test_no_vllm_here_is_bad_input():
    result = runner.invoke(app, VERIFY)
    assert result.exit_code == 1
    assert "--vllm-python" in result.stderr and "tests/oracle/setup_vllm_env.sh" in result.stderr


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="this Python can import vllm")
def test_vllm_python_without_vllm_is_bad_input():
    result = runner.invoke(app, VERIFY + ["--vllm-python", sys.executable])
    assert result.exit_code == 1
    assert "failed at import" in result.stderr and "--vllm-python" in result.stderr


def test_vllm_python_missing_is_bad_input(tmp_path):
    result = runner.invoke(app, VERIFY + ["--vllm-python", str(tmp_path / "no-python")])
    assert result.exit_code == 1
    assert "no such executable" in result.stderr


@pytest.mark.parametrize("sustained, capped, expected_start", [
    (20, False, ""),  # 20 x ceil(896 / 256) = 80 prefill steps <= 128 output tokens
    (33, False, "may read low"),  # 33 x 4 = 132 > 128
    (32, True, "capped"),
])
def test_measurement_limit(sustained, capped, expected_start):
    note = _measurement_limit(SustainedSearch(sustained, capped, ()), (896, 128), {"max_num_batched_tokens": 256})
    assert note.startswith(expected_start) and bool(note) == bool(expected_start)
