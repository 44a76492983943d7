"""Time the paged-attention implementations on a decode step and a mixed prefill + decode step.

    .venv/bin/python benchmarks/bench_kernels.py   # torch reference on CPU; + Triton on CUDA if present

Shapes follow a small GQA model layer: 32 query heads, 8 KV heads, head_dim 128, block_size 16.
Reported: milliseconds per call (median of `repeats`) and effective K/V read bandwidth, counting each
visible K/V byte once (bytes = 2 * visible_tokens * kv_heads * head_dim * itemsize).
"""

from __future__ import annotations

import statistics
import time

import torch

from hkv.kernels import AttentionParams, paged_attention_reference

NUM_Q_HEADS, NUM_KV_HEADS, HEAD_DIM, BLOCK_SIZE = 32, 8, 128, 16


def make_step(q_lens: list[int], seq_lens: list[int], dtype: torch.dtype, device: str):
    blocks = [-(-n // BLOCK_SIZE) for n in seq_lens]
    num_blocks = sum(blocks) + 1
    key_cache = torch.randn(num_blocks, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM, dtype=dtype, device=device)
    value_cache = torch.randn_like(key_cache)
    block_table = torch.zeros(len(seq_lens), max(blocks), dtype=torch.int32, device=device)
    pages = torch.randperm(num_blocks - 1) + 1
    used = 0
    for i, n in enumerate(blocks):
        block_table[i, :n] = pages[used : used + n]
        used += n
    query = torch.randn(sum(q_lens), NUM_Q_HEADS, HEAD_DIM, dtype=dtype, device=device)
    query_start_loc = torch.tensor(
        [0, *torch.tensor(q_lens).cumsum(0).tolist()], dtype=torch.int32, device=device
    )
    seq_lens_t = torch.tensor(seq_lens, dtype=torch.int32, device=device)
    return query, key_cache, value_cache, block_table, query_start_loc, seq_lens_t


def time_ms(fn, repeats: int, device: str) -> float:
    fn()  # warm-up (and Triton compile)
    samples = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def main() -> None:
    params = AttentionParams(scale=HEAD_DIM**-0.5)
    steps = {
        "decode 16 x 1024": ([1] * 16, [1024] * 16),
        "mixed 512-prefill + 15 decodes": ([512] + [1] * 15, [512] + [1024] * 15),
    }
    targets = [("torch", "cpu", torch.float32)]
    if torch.cuda.is_available():
        targets += [("torch", "cuda", torch.bfloat16), ("triton", "cuda", torch.bfloat16)]
    for name, (q_lens, seq_lens) in steps.items():
        for impl, device, dtype in targets:
            args = make_step(q_lens, seq_lens, dtype, device)
            if impl == "triton":
                from hkv.kernels.paged_attention import paged_attention

                max_query_len = max(q_lens)

                def run(args=args, max_query_len=max_query_len):
                    return paged_attention(*args, params, max_query_len=max_query_len)
            else:

                def run(args=args):
                    return paged_attention_reference(*args, params)

            ms = time_ms(run, repeats=5 if device == "cpu" else 20, device=device)
            kv_bytes = 2 * sum(seq_lens) * NUM_KV_HEADS * HEAD_DIM * dtype.itemsize
            gb_per_s = kv_bytes / ms / 1e6
            print(f"{name:32s} {impl:6s} {device:4s} {str(dtype):15s} {ms:9.2f} ms  {gb_per_s:8.1f} GB/s")


if __name__ == "__main__":
    main()
