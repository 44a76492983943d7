"""The page size SGLang picks without --page-size (page_size.py): 1 on Hopper, the attention
backend's on SM100 (B200): trtllm_mha 64, DeepSeek-V3's trtllm_mla 64, other MLA (flashinfer) 1,
the Qwen3.5 / Qwen3-Next, Falcon-H1, Granite-hybrid and LFM2 overrides 1; DSA 64 everywhere."""

from __future__ import annotations

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.pool_resolution import resolve_pools
from hkv.planner.engines.sglang.server_args import SglangServerArgs

B200 = (10, 0)
H100 = (9, 0)


@pytest.mark.parametrize(("name", "capability", "page_size"), [
    ("llama-3.1-8b-instruct", H100, 1),
    ("llama-3.1-8b-instruct", B200, 64),
    ("gpt-oss-20b", B200, 64),
    ("gemma-4-31b-it", B200, 64),
    ("deepseek-v3", H100, 1),
    ("deepseek-v3", B200, 64),
    ("kimi-linear-48b-a3b-instruct", B200, 1),
    ("qwen3-next-80b-a3b", B200, 1),
    ("qwen3.5-27b", B200, 1),
    ("lfm2-1.2b", B200, 1),
    ("nemotron-h-8b-base-8k", B200, 64),
    ("deepseek-v3.2", H100, 64),
])
def test_default_page_size(name: str, capability: tuple[int, int], page_size: int) -> None:
    pools = resolve_pools(load_model_spec(name), SglangServerArgs(), 40 * 2**30, 0.85, compute_capability=capability)
    assert pools.page_size == page_size


def test_pages_round_the_pool_down() -> None:
    # Llama-3.1-8B on a B200: 131,072 x 1,000 + 5 bytes hold 1,000 tokens, 15 whole pages of 64 = 960
    pools = resolve_pools(load_model_spec("llama-3.1-8b-instruct"), SglangServerArgs(), 131072 * 1000 + 5, 0.85,
                          compute_capability=B200)
    assert pools.max_total_num_tokens == 960
