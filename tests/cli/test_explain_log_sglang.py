"""`hkv explain-log` on SGLang start-up logs, both formats: engine detection, the budget from the
printed free memory, and the three public excerpts of ../shared/reference/engines-and-budgets.md.

Hand-worked log (the Llama-3.1-8B case of test_plan_sglang.py): mem_fraction_static 0.9, 79.50 GiB
free before loading, 63.50 GiB after: rest = 63.50 - 79.50 x 0.1 = 55.55 GiB, each printed figure
+-0.005 GiB, so the band is 55.55 GiB +- 0.0055 GiB; 131,072 B a token: 455,065 tokens at 55.55 GiB
(the band spans about 455,020 to 455,110), max_running_requests 4,096 at context_len 8,192; K and V
buffers hold one page more than the tokens: 455,066 x 32 layers x 8 heads x 128 x 2 B =
29,823,205,376 B = 27.775 GiB each, printed 27.78.
"""

from __future__ import annotations

import json

import pytest
from hkv.cli.main import app
from typer.testing import CliRunner

runner = CliRunner()
TP0 = "[2026-04-02 10:11:12 TP0] "


def llama_log(tokens: int = 455065, requests: int = 4096) -> str:
    return "\n".join(TP0 + line for line in [
        "server_args={'model_path': 'meta-llama/Llama-3.1-8B-Instruct', 'tp_size': 1, 'mem_fraction_static': 0.9, "
        "'context_length': 8192, 'page_size': 1, 'kv_cache_dtype': 'auto'}",
        "Load weight begin. avail mem=79.50 GB",
        "Load weight end. elapsed=5.10 s, type=LlamaForCausalLM, avail mem=63.50 GB, mem usage=16.00 GB.",
        f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {tokens}, K size: 27.78 GB, V size: 27.78 GB",
        f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        f"max_running_requests={requests}, context_len=8192, available_gpu_mem=5.12 GB",
    ]) + "\n"


def explain(tmp_path, text: str, *args: str):
    path = tmp_path / "sglang.log"
    path.write_text(text)
    return runner.invoke(app, ["explain-log", str(path), *args])


def test_full_log_reproduced_from_its_free_memory(tmp_path):
    result = explain(tmp_path, llama_log(), "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["engine"], doc["ok"], doc["model"], doc["budget_source"]) == ("sglang", True, "llama-3.1-8b-instruct",
                                                                           "log")
    low, high = doc["budget_band_bytes"]
    assert low <= int(55.55 * 2**30) <= high and high - low < 2**30 // 50
    assert [(c["name"], c["logged"], c["ok"]) for c in doc["checks"]] == [
        ("KV Cache #tokens", "455,065", True), ("max_total_num_tokens", "455,065", True),
        ("max_running_requests", "4,096", True), ("context_len", "8,192", True),
        ("KV Cache size (GiB)", "27.78 + 27.78", True)]
    assert doc["inputs"]["mem_fraction_static"] == 0.9


def test_a_pool_the_free_memory_cannot_give_exits_3(tmp_path):
    result = explain(tmp_path, llama_log(tokens=470000))
    assert result.exit_code == 3
    assert "SGLang logged" in result.stdout and "explained: NO" in result.stdout
    # 470,000 tokens lie above the band: hkv shows the pool of its upper end (55.5555 GiB: 455,110 tokens)
    assert result.stderr.strip() == "hkv: 2 logged number(s) not reproduced: KV Cache #tokens, max_total_num_tokens"
    assert "no budget in it gives the logged pool" in result.stdout and "455,110" in result.stdout


def test_options_override_the_server_args(tmp_path):
    # at TP 2 every rank holds 4 KV heads: the same rest gives twice the tokens, not the logged ones
    result = explain(tmp_path, llama_log(), "--tp", "2", "--format", "json")
    assert result.exit_code == 3
    assert json.loads(result.stdout)["inputs"]["tp_size"] == 2


# The excerpts users posted print pools but no free memory: the budget is the one the logged full
# pool pins, and the check is whether hkv's split gives the other figures from it. MiMo-V2-Flash and
# Gemma-4-E4B are not in the catalog; a catalog model with the same pool rule stands in (gpt-oss and
# Gemma 4: hybrid SWA, swa = int(full x 0.8)); Qwen3-Next for the Mamba cap (5 slots a request:
# 47 // 5 = 9). The stand-in's bytes are not E4B's: the printed 79.94 GiB is not reproduced.
@pytest.mark.parametrize(("line", "model", "checks"), [
    ("Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288", "gpt-oss-120b",
     [("full_layer_tokens", "375,360", True), ("swa_layer_tokens", "300,288", True)]),
    ("SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846", "gemma-4-26b-a4b",
     [("SWAKVPool full size", "997,846", True), ("SWAKVPool swa size", "798,276", True),
      ("SWAKVPool mem usage (GiB)", "79.94", False)]),
    ("max_running_requests is capped to 9 by the mamba state cache (max_mamba_cache_size=47, 5 state slots per "
     "request). To raise it: increase --mamba-full-memory-ratio", "qwen3-next-80b-a3b",
     [("mamba cap max_mamba_cache_size", "47", True), ("mamba cap max_running_requests", "9", True)]),
])
def test_public_excerpts(tmp_path, line, model, checks):
    result = explain(tmp_path, line + "\n", "--model", model, "--format", "json")
    assert result.exit_code == (0 if all(ok for *_, ok in checks) else 3), result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["budget_source"] == "inferred from the logged pool"
    assert [(c["name"], c["logged"], c["ok"]) for c in doc["checks"]] == checks
    assert all(c["reproduced"] == c["logged"] for c in doc["checks"] if c["ok"])


def test_excerpt_human_output(tmp_path):
    result = explain(tmp_path, "Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288\n",
                     "--model", "gpt-oss-120b")
    assert result.exit_code == 0, result.stderr
    assert "SGLang 0.5.23" in result.stdout and "inferred from the logged pool" in result.stdout
    assert "explained: yes" in result.stdout


def test_sglang_log_without_a_model_is_one_line(tmp_path):
    result = explain(tmp_path, "Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288\n")
    assert result.exit_code == 1
    assert result.stderr.strip() == "hkv: error: the log names no model (no 'server_args=' line): pass --model"


def test_sglang_options_on_a_vllm_log_are_refused(tmp_path):
    result = explain(tmp_path, "INFO 11-23 10:00:30 [gpu_worker.py:760] Available KV cache memory: 37.5 GiB\n",
                     "--model", "llama-3.1-8b-instruct", "--mem-fraction-static", "0.8")
    assert result.exit_code == 1
    assert result.stderr.strip() == "hkv: error: --mem-fraction-static applies to SGLang only; this is a vLLM log"
