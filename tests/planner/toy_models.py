"""Hand-built ModelSpecs with the published config facts of real models (no catalog parsing),
so planner tests do not depend on config classification."""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.layer_desc import AttentionDesc, RecurrentDesc
from hkv.model_specs.model_spec import ModelSpec

FULL, SLIDING, CHUNKED = CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED


def attention_model(kinds: list[CacheKind], *, kv_heads: int, head_dim: int, window: int = 0,
                    chunk: int = 0, max_len: int = 131072, name: str = "toy") -> ModelSpec:
    layers = tuple(
        AttentionDesc(i, k, kv_heads, head_dim, head_dim,
                      window_len=window if k is SLIDING else None, chunk_len=chunk if k is CHUNKED else None)
        for i, k in enumerate(kinds))
    return ModelSpec(name, name, "toy", len(kinds), layers, max_len, 1024, 1000, 4096, 2, 1_000_000_000)


def gemma3_27b() -> ModelSpec:
    # 62 layers, every 6th full ((i+1) % 6 == 0): 52 sliding (window 1024) + 10 full, 16 KV heads x 128.
    kinds = [FULL if (i + 1) % 6 == 0 else SLIDING for i in range(62)]
    return attention_model(kinds, kv_heads=16, head_dim=128, window=1024, name="gemma-3-27b")


def gpt_oss_120b() -> ModelSpec:
    # 36 layers, even layers sliding (window 128), 8 KV heads x 64.
    kinds = [SLIDING if i % 2 == 0 else FULL for i in range(36)]
    return attention_model(kinds, kv_heads=8, head_dim=64, window=128, name="gpt-oss-120b")


def llama4_scout() -> ModelSpec:
    # 48 layers, every 4th layer NoPE = full, the others chunked (8192), 8 KV heads x 128.
    kinds = [FULL if (i + 1) % 4 == 0 else CHUNKED for i in range(48)]
    return attention_model(kinds, kv_heads=8, head_dim=128, chunk=8192, max_len=10_485_760, name="llama-4-scout")


def mamba2_hybrid(num_layers: int, attention_at: set[int], *, n_groups: int, ssm_dtype_bytes: int,
                  name: str) -> ModelSpec:
    # hidden 4096, expand 2 -> intermediate 8192; 128 heads x 64, d_state 128, conv kernel 4;
    # attention 8 KV heads x 128.
    layers = []
    for i in range(num_layers):
        if i in attention_at:
            layers.append(AttentionDesc(i, FULL, 8, 128, 128))
        else:
            layers.append(RecurrentDesc(i, "mamba2", 4, 8192 + 2 * n_groups * 128, 128, (64, 128),
                                        2, ssm_dtype_bytes))
    return ModelSpec(name, name, "toy", num_layers, tuple(layers), 131072, 4096, 100352, 8192, 2,
                     8_000_000_000)


def granite4_like() -> ModelSpec:
    return mamba2_hybrid(40, {9, 19, 29, 39}, n_groups=1, ssm_dtype_bytes=2, name="granite-4-like")


def nemotron_h_8b_like() -> ModelSpec:
    return mamba2_hybrid(28, {6, 13, 20, 27}, n_groups=8, ssm_dtype_bytes=4, name="nemotron-h-8b-like")
