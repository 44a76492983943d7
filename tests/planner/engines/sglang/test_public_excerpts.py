"""The three public SGLang excerpts in ../shared/reference/engines-and-budgets.md, reproduced as far
as what they print allows.

None of the three prints the free memory SGLang measured (its "Memory baseline taken" / "Load weight
end ... avail mem" lines were not posted), so none can be reproduced from the GPU up. What each
reproduces, and what is missing:

1. Gemma-4-E4B on GB10, "SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846".
   Reproduced: the split (swa = int(997,846 x 0.8) = int(798,276.8)) and the 79.94 GB, from the
   profiled rest the logged full pool pins. Missing: GB10's free memory (unified memory: SGLang reads
   the OS's available memory) and the weights, so the rest (and mem_fraction_static) itself.
   The config is written here from Gemma-4-E4B's published config.json as far as sizing reads it
   (42 layers, every sixth full; 2 KV heads; head_dim 256 sliding, 512 full; the 18 KV-shared layers
   still get pool rows in SGLang, which counts layers by layer_types): hkv's catalog has no copy.
   Cells: full 7 x 2 x (512 + 512) x 2 B = 28,672 B; sliding 35 x 2 x (256 + 256) x 2 B = 71,680 B;
   SGLang's cell 28,672 + 0.8 x 71,680 = 86,016 B, so full = 997,846 needs a rest in
   [997,846 x 86,016, 997,847 x 86,016) = [85,830,721,536, 85,830,807,552) bytes.
   Buffers hold one page (1 token) more: (997,847 x 28,672 + 798,277 x 71,680) / 2^30
   = (28,610,269,184 + 57,220,495,360) / 1,073,741,824 = 79.935 -> "79.94 GB".
2. MiMo-V2-Flash TP4, "full_layer_tokens=375360, swa_layer_tokens=300288". Reproduced: the split,
   int(375,360 x 0.8) = 300,288. Missing: MiMo-V2-Flash's config (layer pattern, K/V heads and head
   sizes of its full and sliding layers; not in hkv's catalog or reference configs) and the free memory,
   so the full pool itself.
3. sglang issue #38846, "max_running_requests is capped to 9 by the mamba state cache
   (max_mamba_cache_size=47, 5 state slots per request)". Reproduced: 47 // 5 = 9 for a hybrid whose
   radix cache keeps the extra buffer (5 slots: 3 + 2 with the overlap scheduler), and the warning's
   text. Missing: the model, GPU and free memory that gave 47 slots.
"""

from __future__ import annotations

import pytest
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.pool_resolution import resolve
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.engines.sglang.startup_lines import start_up_lines
from hkv.planner.engines.sglang.token_pools import SwaSplit, capped_swa_pools

GEMMA4_E4B = {
    "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "torch_dtype": "bfloat16",
    "text_config": {
        "model_type": "gemma4_text", "hidden_size": 2560, "num_hidden_layers": 42, "num_attention_heads": 8,
        "num_key_value_heads": 2, "head_dim": 256, "global_head_dim": 512, "sliding_window": 512,
        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 7, "num_kv_shared_layers": 18,
        "max_position_embeddings": 131072, "vocab_size": 262144, "intermediate_size": 10240,
        "torch_dtype": "bfloat16"},
}


@pytest.mark.parametrize("rest", [85_830_721_536, 85_830_807_551])
def test_gemma4_e4b_swa_pool_line(rest: int) -> None:
    spec = from_hf_config(GEMMA4_E4B, name="gemma-4-e4b")
    res = resolve(spec, SglangServerArgs(), rest, 0.9, compute_capability=(12, 1))
    assert (res.pools.max_total_num_tokens, res.pools.swa_tokens) == (997846, 798276)
    lines = start_up_lines(res, chunked_prefill_size=8192)
    assert "SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846" in lines
    assert "Use sliding window memory pool. full_layer_tokens=997846, swa_layer_tokens=798276" in lines


def test_gemma4_e4b_rest_outside_the_interval_misses() -> None:
    spec = from_hf_config(GEMMA4_E4B, name="gemma-4-e4b")
    below = resolve(spec, SglangServerArgs(), 85_830_721_535, 0.9, compute_capability=(12, 1))
    assert below.pools.max_total_num_tokens == 997845


def test_mimo_v2_flash_split() -> None:
    pools = capped_swa_pools(375360, 1, SwaSplit(ratio=0.8, ratio_cell=True, window=128))
    assert (pools.full, pools.swa) == (375360, 300288)


def test_issue_38846_cap_and_warning() -> None:
    # Nemotron-H keeps the extra buffer (5 slots a request); --max-mamba-cache-size 47 gives 47 slots.
    res = resolve(load_model_spec("nemotron-h-8b-base-8k"), SglangServerArgs(max_mamba_cache_size=47), 40 * 2**30, 0.83)
    assert res.pools.max_running_requests == 9
    warning = ("max_running_requests is capped to 9 by the mamba state cache (max_mamba_cache_size=47, 5 state slots "
               "per request). To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve "
               "the state size with --mamba-ssm-dtype bfloat16.")
    assert warning in start_up_lines(res, chunked_prefill_size=8192)
