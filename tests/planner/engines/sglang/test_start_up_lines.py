"""The start-up lines SGLang 0.5.23 would print, worked by hand (buffers hold one page more than
their tokens, a state pool one slot more; "GB" is GiB)."""

from __future__ import annotations

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.pool_resolution import resolve
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.engines.sglang.startup_lines import start_up_lines

GIB = 2**30


def test_dense_model() -> None:
    # Llama-3.1-8B, 40 GiB: 327,680 tokens; K = 327,681 x 8 x 128 x 32 x 2 B = 21,474,902,016 B = 20.0001 GiB
    res = resolve(load_model_spec("llama-3.1-8b-instruct"), SglangServerArgs(), 40 * GIB, 0.83)
    assert start_up_lines(res, chunked_prefill_size=8192) == (
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 327680, K size: 20.00 GB, V size: 20.00 GB",
        ("max_total_num_tokens=327680, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, "
        "context_len=131072"),
    )


def test_hybrid_recurrent_model() -> None:
    # Nemotron-H-8B, 40 GiB: 198 slots (199 rows): conv 199 x 24 x 61,440 B = 293,437,440 B = 0.273 GiB,
    # SSM 199 x 24 x 4,194,304 B = 20,031,995,904 B = 18.656 GiB; 1,380,874 tokens (1,380,875 rows)
    # x 4 layers x 8 x 128 x 2 B = 11,312,128,000 B = 10.535 GiB for K and for V; cap 198 // 5 = 39
    res = resolve(load_model_spec("nemotron-h-8b-base-8k"), SglangServerArgs(), 40 * GIB, 0.83)
    assert start_up_lines(res, chunked_prefill_size=8192) == (
        ("max_running_requests is capped to 39 by the mamba state cache (max_mamba_cache_size=198, 5 state slots per "
        "request). To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state size "
        "with --mamba-ssm-dtype bfloat16."),
        "Mamba Cache is allocated. max_mamba_cache_size: 198, conv_state size: 0.27GB, ssm_state size: 18.66GB ",
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1380874, K size: 10.54 GB, V size: 10.54 GB",
        ("max_total_num_tokens=1380874, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=39, "
        "context_len=8192"),
    )


def test_mla_model() -> None:
    # DeepSeek-V3, 40 GiB: 611,191 tokens; 611,192 rows x 70,272 B = 42,949,684,224 B = 40.00001 GiB
    res = resolve(load_model_spec("deepseek-v3"), SglangServerArgs(), 40 * GIB, 0.83)
    assert start_up_lines(res, chunked_prefill_size=8192)[0] == (
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 611191, KV size: 40.00 GB")


def test_hybrid_swa_model() -> None:
    # Gemma-4-31B, 10 GiB: full 14,563, swa 11,650. Full K: 14,564 x 10 x 4 x 512 x 2 B = 596,541,440 B
    # = 0.556 GiB; SWA K: 11,651 x 50 x 16 x 256 x 2 B = 4,772,249,600 B = 4.444 GiB;
    # pool (2 x 596,541,440 + 2 x 4,772,249,600) / 2^30 = 10,737,582,080 / 2^30 = 10.0002 GiB
    res = resolve(load_model_spec("gemma-4-31b-it"), SglangServerArgs(), 10 * GIB, 0.83)
    assert start_up_lines(res, chunked_prefill_size=8192)[:4] == (
        "Use sliding window memory pool. full_layer_tokens=14563, swa_layer_tokens=11650",
        "Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 14563, K size: 0.56 GB, V size: 0.56 GB",
        "SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 11650, K size: 4.44 GB, V size: 4.44 GB",
        "SWAKVPool mem usage: 10.00 GB, swa size: 11650, full size: 14563",
    )
