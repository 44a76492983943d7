"""Per-token KV bytes of catalog attention layers, checked against hand arithmetic."""

from __future__ import annotations

import pytest

from hkv.model_specs import AttentionDesc, CacheOptions, load_model_spec


def _first_attention(name: str) -> AttentionDesc:
    return next(c for c in load_model_spec(name).cache_layers if isinstance(c, AttentionDesc))


CASES = [
    # DeepSeek-V3 MLA: one latent of kv_lora_rank 512 + qk_rope_head_dim 64 = 576 x 2 B = 1152, at any TP.
    ("deepseek-v3", 1, 1152),
    ("deepseek-v3", 8, 1152),
    # Kimi-Linear MLA layers: same 512 + 64 latent.
    ("kimi-linear-48b-a3b-instruct", 4, 1152),
    # Gemma-3-27B: 16 KV heads x 128 x (K+V) x 2 B = 8192; TP2 -> 8 heads -> 4096.
    ("gemma-3-27b-it", 1, 8192),
    ("gemma-3-27b-it", 2, 4096),
    # gpt-oss-120b: 8 x 64 x 2 x 2 = 2048; TP8 -> 1 head -> 256.
    ("gpt-oss-120b", 1, 2048),
    ("gpt-oss-120b", 8, 256),
    # Llama-4-Scout TP8: 8 KV heads / 8 = 1 x 128 x 2 x 2 = 512.
    ("llama-4-scout-17b-16e-instruct", 8, 512),
    # gemma-3n-E4B: 2 KV heads x 256 x 2 x 2 = 2048; TP4 keeps at least one head -> 1024.
    ("gemma-3n-e4b", 1, 2048),
    ("gemma-3n-e4b", 4, 1024),
    # Nemotron-Nano-9B-v2: head_dim 128 (explicit, not 4480/40 = 112): 8 x 128 x 2 x 2 = 4096.
    ("nvidia-nemotron-nano-9b-v2", 1, 4096),
    # MiniMax-M1: head_dim 128 explicit (6144/64 would be 96): 8 x 128 x 2 x 2 = 4096.
    ("minimax-m1", 1, 4096),
]


@pytest.mark.parametrize(("name", "tp", "bytes_per_token"), CASES)
def test_bytes_per_token(name: str, tp: int, bytes_per_token: int) -> None:
    spec = _first_attention(name).cache_spec(CacheOptions(tp=tp))
    assert spec is not None and spec.bytes_per_token == bytes_per_token


def test_mla_desc_shape() -> None:
    desc = _first_attention("deepseek-v3")
    assert (desc.is_mla, desc.num_kv_heads, desc.head_dim, desc.head_dim_v) == (True, 1, 576, 0)


def test_fp8_kv_halves_bytes() -> None:
    spec = _first_attention("gemma-3-27b-it").cache_spec(CacheOptions(tp=1, kv_dtype_bytes=1))
    assert spec.bytes_per_token == 4096  # 16 x 128 x 2 x 1


def test_model_level_fields() -> None:
    spec = load_model_spec("gpt-oss-120b")
    assert spec.has_sinks and spec.attn_logit_softcap is None
    gemma2 = load_model_spec("gemma-2-9b")
    assert gemma2.attn_logit_softcap == 50.0 and not gemma2.has_sinks
    assert load_model_spec("qwen3-8b").max_model_len == 40960
    assert load_model_spec("kimi-linear-48b-a3b-instruct").max_model_len == 1048576  # model_max_length
