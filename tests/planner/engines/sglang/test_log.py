"""read_sglang_log on lines written from SGLang 0.5.23's own format strings and on the excerpts users
posted (../shared/reference/engines-and-budgets.md); detect_log_engine on both engines' logs.

Expected values are the numbers written in the lines themselves (what a reader must return), not
values computed by the reader."""

from __future__ import annotations

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.log_engine import SGLANG, VLLM, detect_log_engine
from hkv.planner.engines.sglang.log import MambaCap, read_sglang_log
from hkv.planner.engines.sglang.plan import plan_sglang
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.errors import InvalidInputError

TP0 = "[2026-04-02 10:11:12 TP0] "
GIB = 2**30

# The three real excerpts (MiMo-V2-Flash TP4; Gemma-4-E4B on GB10; sglang issue #38846).
MIMO = "Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288"
GEMMA4 = "SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846"
CAPPED = ("max_running_requests is capped to 9 by the mamba state cache (max_mamba_cache_size=47, 5 state slots per "
          "request). To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state "
          "size with --mamba-ssm-dtype bfloat16.")


@pytest.mark.parametrize(("line", "field", "expected"), [
    (MIMO, "full_layer_tokens", 375360),
    (MIMO, "swa_layer_tokens", 300288),
    (MIMO, "swa_tokens", 300288),
    (GEMMA4, "swa_pool_swa_tokens", 798276),
    (GEMMA4, "swa_pool_full_tokens", 997846),
    (GEMMA4, "swa_tokens", 798276),
    (CAPPED, "mamba_cap", MambaCap(max_running_requests=9, max_mamba_cache_size=47, slots_per_request=5)),
    ("Use sliding window memory pool (all SWA). swa_layer_tokens=65536", "swa_layer_tokens", 65536),
    ("Mamba Cache is allocated. max_mamba_cache_size: 47, conv_state size: 0.01GB, ssm_state size: 1.20GB ",
     "max_mamba_cache_size", 47),
])
def test_real_and_format_lines(line, field, expected):
    for text in (line, TP0 + line):  # bare paste and with SGLang's prefix
        assert getattr(read_sglang_log([text]), field) == expected


def test_swa_pool_usage_is_gib_as_printed():
    log = read_sglang_log([GEMMA4])
    assert log.swa_pool_usage.text == "79.94"
    assert log.swa_pool_usage.bytes == int(79.94 * GIB)
    assert log.swa_pool_usage.interval == (int(79.94 * GIB) - GIB // 200, int(79.94 * GIB) + GIB // 200)


@pytest.mark.parametrize(("line", "label", "tokens", "dtype", "gib"), [
    # 0.5.23, SWA pools labelled: memory_pool.py's "{label} KV Cache is allocated. dtype: ..., #tokens: ..."
    ("Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 997846, K size: 1.90 GB, V size: 1.90 GB",
     "kv_pool", 997846, "torch.bfloat16", ("1.90", "1.90")),
    ("SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 798276, K size: 12.18 GB, V size: 12.18 GB",
     "swa_kv_pool", 798276, "torch.bfloat16", ("12.18", "12.18")),
    # one pool; MLA prints one size
    ("KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 1234567, KV size: 40.31 GB",
     "kv_pool", 1234567, "torch.float8_e4m3fn", ("40.31",)),
    # older releases: no dtype
    ("KV Cache is allocated. #tokens: 1197237, K size: 42.11 GB, V size: 42.11 GB",
     "kv_pool", 1197237, None, ("42.11", "42.11")),
])
def test_kv_pool_lines(line, label, tokens, dtype, gib):
    pool = getattr(read_sglang_log([TP0 + line]), label)
    assert (pool.num_tokens, pool.dtype, tuple(f.text for f in pool.sizes_gib)) == (tokens, dtype, gib)


def test_post_capture_resize_line_is_not_the_pool_line():
    # kv_pool_runtime.py's resize summary ("KV cache allocated", lower case) is not the pool allocation
    with pytest.raises(InvalidInputError):
        read_sglang_log(["Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 5, KV size: "
                         "0.01 GB, avail mem=3.00 GB"])


def test_first_pool_line_wins_over_ranks_and_the_draft():
    log = read_sglang_log([
        "[TP0] KV Cache is allocated. #tokens: 500000, K size: 10.00 GB, V size: 10.00 GB",
        "[TP1] KV Cache is allocated. #tokens: 500000, K size: 10.00 GB, V size: 10.00 GB",
        "[TP0] KV Cache is allocated. #tokens: 500000, K size: 0.50 GB, V size: 0.50 GB",  # the draft's pool
    ])
    assert [f.text for f in log.kv_pool.sizes_gib] == ["10.00", "10.00"]


@pytest.mark.parametrize(("line", "expected"), [
    ("max_total_num_tokens=375360, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, "
     "context_len=131072, available_gpu_mem=5.12 GB", (375360, 8192, 16384, 2048, 131072, "5.12")),
    ("max_total_num_tokens=20480, chunked_prefill_size=-1, max_prefill_tokens=16384, max_running_requests=9, "
     "context_len=262144, available_cpu_mem=100.50 GB", (20480, -1, 16384, 9, 262144, "100.50")),
    ("max_total_num_tokens=1197237, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, "
     "context_len=131072", (1197237, 8192, 16384, 4097, 131072, None)),
    # releases before chunked prefill
    ("max_total_num_tokens=1197237, max_prefill_tokens=16384, max_running_requests=4097, context_len=131072",
     (1197237, None, 16384, 4097, 131072, None)),
])
def test_scheduler_summary(line, expected):
    s = read_sglang_log([TP0 + line]).summary
    avail = None if s.available_gpu_mem is None else s.available_gpu_mem.text
    assert (s.max_total_num_tokens, s.chunked_prefill_size, s.max_prefill_tokens, s.max_running_requests,
            s.context_len, avail) == expected


def test_weight_lines():
    log = read_sglang_log([
        TP0 + "Load weight begin. avail mem=78.52 GB",
        TP0 + "Load weight end. elapsed=12.31 s, type=GptOssForCausalLM, quant=mxfp4, avail mem=17.01 GB, "
              "mem usage=61.51 GB.",
    ])
    assert (log.load_begin_avail.text, log.load_end_avail.text, log.weights.text) == ("78.52", "17.01", "61.51")
    older = read_sglang_log(["Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=62.13 GB, "
                             "mem usage=15.11 GB."])
    assert (older.load_end_avail.text, older.weights.text) == ("62.13", "15.11")


def test_server_args_dict_of_0_5_23_with_objects_inside():
    # resolved_dict() expands nested records; enum members make the repr unreadable by literal_eval
    log = read_sglang_log([TP0 + "server_args={'model_path': 'openai/gpt-oss-120b', 'tp_size': 2, "
                           "'mem_fraction_static': 0.83, 'context_length': 32768, 'cuda_graph_config': "
                           "{'decode': {'backend': <Backend.FULL: 'full'>}}, 'page_size': 1, 'disable_radix_cache': "
                           "False, 'speculative_algorithm': None}"])
    assert log.model_path == "openai/gpt-oss-120b"
    assert {k: log.args[k] for k in ("tp_size", "mem_fraction_static", "context_length", "page_size",
                                     "disable_radix_cache", "speculative_algorithm")} == {
        "tp_size": 2, "mem_fraction_static": 0.83, "context_length": 32768, "page_size": 1,
        "disable_radix_cache": False, "speculative_algorithm": None}


def test_server_args_plain_dict_and_older_repr():
    plain = read_sglang_log(["server_args={'model_path': 'Qwen/Qwen3-Next-80B-A3B-Instruct', 'tp_size': 4}"])
    assert plain.args == {"model_path": "Qwen/Qwen3-Next-80B-A3B-Instruct", "tp_size": 4}
    older = read_sglang_log(["[2025-01-15 10:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B', "
                             "kv_cache_dtype='auto', context_length=None, mem_fraction_static=0.88, "
                             "json_model_override_args='{}', cuda_graph_bs=[1, 2, 4], cuda_graph_max_bs=160, "
                             "tp_size=1, disable_radix_cache=False)"])
    assert older.args == {"model_path": "meta-llama/Llama-3.1-8B", "kv_cache_dtype": "auto", "context_length": None,
                          "mem_fraction_static": 0.88, "json_model_override_args": "{}", "cuda_graph_max_bs": 160,
                          "tp_size": 1, "disable_radix_cache": False}


def test_server_args_repr_with_elided_items():
    # A pasted dump with "..." in place of fields (the Grok-2 blog's, g004): the items next to each "..."
    # are read too, tp_size among them (missing it sizes the pools at TP 1, an eighth of the tokens).
    log = read_sglang_log(["[2025-09-11 10:24:10] server_args=ServerArgs(model_path='/models/grok-2', ... "
                           "dtype='auto', quantization='fp8', mem_fraction_static=0.831, max_running_requests=None, "
                           "... max_total_tokens=None, page_size=1, swa_full_tokens_ratio=0.8, ... tp_size=8, "
                           "pp_size=1, ... attention_backend='triton', ... cuda_graph_max_bs=None, ...)"])
    assert log.args == {"model_path": "/models/grok-2", "dtype": "auto", "quantization": "fp8",
                        "mem_fraction_static": 0.831,
                        "max_running_requests": None, "max_total_tokens": None, "page_size": 1,
                        "swa_full_tokens_ratio": 0.8, "tp_size": 8, "pp_size": 1, "attention_backend": "triton",
                        "cuda_graph_max_bs": None}


def test_kv_pool_line_quoted_in_backticks():
    # A test report quoting the line in Markdown (g005, Nemotron-3-Nano-Omni on 4 x GB10).
    log = read_sglang_log(["- `KV Cache is allocated. dtype: float8_e4m3fn, #tokens: 19644177, K size: 14.05 GB, "
                           "V size: 14.05 GB`; avail mem 42.45 GB after pools"])
    assert log.kv_pool is not None and log.kv_pool.num_tokens == 19644177


def test_no_sglang_line_is_one_clear_error():
    with pytest.raises(InvalidInputError, match="none of SGLang's start-up lines"):
        read_sglang_log(["INFO 11-23 10:00:30 Available KV cache memory: 37.5 GiB", ""])


VLLM_LINES = [
    "(APIServer pid=1) INFO 11-23 10:00:00 [api_utils.py:327] vLLM server version 0.32.0, serving model x",
    "(EngineCore_DP0 pid=7) INFO 11-23 10:00:30 [gpu_worker.py:760] Available KV cache memory: 37.5 GiB",
    "(EngineCore_DP0 pid=7) INFO [kv_cache_utils.py:2328] GPU KV cache size: 81,920 tokens, Maximum concurrency "
    "for 8,192 tokens per request: 10.00x",
]


@pytest.mark.parametrize(("lines", "engine"), [
    (VLLM_LINES, VLLM),
    ([MIMO], SGLANG),
    ([GEMMA4], SGLANG),
    ([CAPPED], SGLANG),
    ([TP0 + "Load weight end. elapsed=1.00 s, type=X, avail mem=1.00 GB, mem usage=1.00 GB.", TP0 + MIMO], SGLANG),
    (["nothing either engine prints"], VLLM),  # vLLM's reader then names what it expected
])
def test_detect_log_engine(lines, engine):
    assert detect_log_engine(lines) == engine


@pytest.mark.parametrize(("model", "gpu"), [("gpt-oss-120b", "h200"), ("qwen3-next-80b-a3b", "h200"),
                                            ("llama-3.1-8b-instruct", "h100")])
def test_reads_back_the_lines_hkv_predicts(model, gpu):
    # the formatter (startup_lines.py) and this reader were written apart from SGLang's format strings:
    # each number the predicted lines print must come back as the pools' own
    planned = plan_sglang(load_model_spec(model), SglangServerArgs(tp_size=2), gpu=gpu)
    pools, log = planned.pools, read_sglang_log(planned.start_up_lines())
    assert log.summary.max_total_num_tokens == log.kv_pool.num_tokens == pools.max_total_num_tokens
    assert (log.summary.max_running_requests, log.summary.context_len) == (pools.max_running_requests,
                                                                           pools.context_len)
    assert (log.swa_tokens, log.max_mamba_cache_size) == (pools.swa_tokens, pools.max_mamba_cache_size)
    if pools.swa_tokens is not None:
        assert (log.full_layer_tokens, log.swa_pool_full_tokens, log.swa_kv_pool.num_tokens) == (
            pools.max_total_num_tokens, pools.max_total_num_tokens, pools.swa_tokens)
    assert detect_log_engine(planned.start_up_lines()) == SGLANG
