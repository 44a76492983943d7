"""Every catalog model's layers are classified as its family's convention says.

Expected values are derived by hand from the config (rule in the comment), never from the code.
"""

from __future__ import annotations

import pytest

from hkv.model_specs import AttentionDesc, CacheKind, RecurrentDesc, load_model_spec

FULL, SLIDING, CHUNKED = CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED

# name -> (layer_mix, {layer index: expected kind or recurrent variant}, window or chunk length)
CASES = {
    # 62 layers, sliding_window_pattern 6 (Gemma3TextConfig default): full where (i+1) % 6 == 0
    # -> 5, 11, ..., 59 = 10 full; 52 sliding with window 1024.
    "gemma-3-27b-it": ({"sliding": 52, "full": 10}, {0: SLIDING, 4: SLIDING, 5: FULL, 11: FULL, 59: FULL,
                                                    60: SLIDING, 61: SLIDING}, 1024),
    # 26 layers, pattern 6 -> full at 5, 11, 17, 23; window 512.
    "gemma-3-1b-it": ({"sliding": 22, "full": 4}, {5: FULL, 23: FULL, 24: SLIDING, 25: SLIDING}, 512),
    # 34 layers -> full at 5, 11, 17, 23, 29.
    "gemma-3-4b-it": ({"sliding": 29, "full": 5}, {29: FULL, 33: SLIDING}, 1024),
    # 48 layers -> full at 5, ..., 47.
    "gemma-3-12b-it": ({"sliding": 40, "full": 8}, {47: FULL, 46: SLIDING}, 1024),
    # Gemma 2: even layers sliding, odd full; 42 and 46 layers, window 4096.
    "gemma-2-9b": ({"sliding": 21, "full": 21}, {0: SLIDING, 1: FULL, 40: SLIDING, 41: FULL}, 4096),
    "gemma-2-27b": ({"sliding": 23, "full": 23}, {0: SLIDING, 45: FULL}, 4096),
    # Cohere2: pattern 4 -> full at 3, 7, ..., 31 (8); 24 sliding of 4096.
    "command-r7b-12-2024": ({"sliding": 24, "full": 8}, {0: SLIDING, 3: FULL, 31: FULL, 30: SLIDING}, 4096),
    # gpt-oss: layer_types alternate starting with sliding; 36 -> 18 + 18, window 128.
    "gpt-oss-120b": ({"sliding": 18, "full": 18}, {0: SLIDING, 1: FULL, 34: SLIDING, 35: FULL}, 128),
    "gpt-oss-20b": ({"sliding": 12, "full": 12}, {22: SLIDING, 23: FULL}, 128),
    # Llama 4: no_rope_layers absent -> NoPE (full) where (i+1) % 4 == 0: 3, 7, ..., 47; chunk 8192.
    "llama-4-scout-17b-16e-instruct": ({"chunked": 36, "full": 12},
                                       {0: CHUNKED, 2: CHUNKED, 3: FULL, 47: FULL}, 8192),
    "llama-4-maverick-17b-128e-instruct": ({"chunked": 36, "full": 12}, {3: FULL, 44: CHUNKED}, 8192),
    # Mistral-7B: sliding_window 4096 < max_position_embeddings 32768 -> every layer sliding.
    "mistral-7b-v0.1": ({"sliding": 32}, {0: SLIDING, 31: SLIDING}, 4096),
    # Ministral: sliding_window 32768 == max_position_embeddings -> the window never bites: full.
    "ministral-8b-instruct-2410": ({"full": 36}, {0: FULL, 35: FULL}, None),
    # Plain full-attention controls.
    "llama-3.1-8b-instruct": ({"full": 32}, {0: FULL, 31: FULL}, None),
    "qwen3-8b": ({"full": 36}, {0: FULL, 35: FULL}, None),  # use_sliding_window false
    "glm-4.5-air": ({"full": 46}, {45: FULL}, None),
    "deepseek-v3": ({"full": 61}, {0: FULL, 60: FULL}, None),
    "a.x-k1": ({"full": 61}, {0: FULL, 60: FULL}, None),  # MLA on every layer
    "sarvam-105b": ({"full": 32}, {0: FULL, 31: FULL}, None),  # MLA on every layer
    "minicpm3-4b": ({"full": 62}, {0: FULL, 61: FULL}, None),  # per-head K/V in vLLM (latent_attention_form)
    # OLMo-Hybrid-7B: layer_types with full attention at 3, 7, ..., 31 and gated delta-net elsewhere.
    "olmo-hybrid-7b": ({"gdn": 24, "full": 8}, {0: "gdn", 2: "gdn", 3: FULL, 30: "gdn", 31: FULL}, None),
    # Qwen3-Next: full_attention_interval 4 -> full at 3, 7, ..., 47 (12); 36 gated delta-net.
    "qwen3-next-80b-a3b": ({"gdn": 36, "full": 12}, {0: "gdn", 2: "gdn", 3: FULL, 47: FULL}, None),
    # 40 layers, full_attention_interval 4 (and the same layer_types): full at 3, 7, ..., 39.
    "qwen3.6-35b-a3b": ({"gdn": 30, "full": 10}, {0: "gdn", 2: "gdn", 3: FULL, 39: FULL}, None),
    # MiniMax-M1: attn_type_list 1 at 7, 15, ..., 79 -> 10 softmax; 70 lightning.
    "minimax-m1": ({"lightning": 70, "full": 10}, {0: "lightning", 7: FULL, 78: "lightning", 79: FULL}, None),
    # Bamba-9B: attn_layer_indices [9, 18, 27]; 29 Mamba2.
    "bamba-9b": ({"mamba2": 29, "full": 3}, {0: "mamba2", 9: FULL, 18: FULL, 27: FULL, 31: "mamba2"}, None),
    # Granite-4.0-H-Small: assumed attention at 5, 15, 25, 35 (catalog _assumed_layer_types); 36 Mamba2.
    "granite-4.0-h-small": ({"mamba2": 36, "full": 4}, {5: FULL, 15: FULL, 25: FULL, 35: FULL, 0: "mamba2"},
                            None),
    # Jamba: attention where i % 8 == 4 -> 4, 12, 20, 28; 28 Mamba1.
    "jamba-v0.1": ({"mamba1": 28, "full": 4}, {4: FULL, 12: FULL, 28: FULL, 0: "mamba1", 31: "mamba1"}, None),
    # Nemotron-H-8B pattern "M-M-M-M*-M-M-M-M-M*-..." : '*' at 7, 18, 29, 40; 'M' 24 times; '-' owns nothing.
    "nemotron-h-8b-base-8k": ({"mamba2": 24, "full": 4}, {0: "mamba2", 7: FULL, 18: FULL, 29: FULL, 40: FULL,
                                                         50: "mamba2"}, None),
    # Nemotron-Nano-9B-v2: catalog note: 27 Mamba2 + 4 attention at 14, 21, 30, 39 + 25 MLP-only.
    "nvidia-nemotron-nano-9b-v2": ({"mamba2": 27, "full": 4}, {14: FULL, 21: FULL, 30: FULL, 39: FULL}, None),
    # Nemotron-3-Nano "MEMEM*EMEMEM*...": '*' at 5, 12, 19, 26, 33, 42; 'M' 23 times; 'E' owns nothing.
    "nemotron-3-nano-30b-a3b": ({"mamba2": 23, "full": 6}, {0: "mamba2", 5: FULL, 42: FULL, 50: "mamba2"},
                                None),
    # Falcon-H1: every layer holds attention AND a Mamba2 mixer.
    "falcon-h1-7b": ({"full": 44, "mamba2": 44}, {0: FULL, 43: FULL}, None),
    # Kimi-Linear: 1-based full_attn_layers [4, 8, ..., 24, 27] -> 0-based 3, 7, ..., 23, 26 (MLA); 20 KDA.
    "kimi-linear-48b-a3b-instruct": ({"kda": 20, "full": 7},
                                     {0: "kda", 3: FULL, 23: FULL, 26: FULL, 25: "kda"}, None),
    # Gemma-4-31B: layer_types 5 sliding then 1 full, 10 times -> full at 5, 11, ..., 59; window 1024.
    "gemma-4-31b-it": ({"sliding": 50, "full": 10}, {0: SLIDING, 5: FULL, 58: SLIDING, 59: FULL}, 1024),
    # google/gemma-4-26B-A4B's config.json (text_config.layer_types): 30 layers, every 6th full.
    "gemma-4-26b-a4b": ({"sliding": 25, "full": 5}, {0: SLIDING, 5: FULL, 28: SLIDING, 29: FULL}, 1024),
    # MiniMax-M3 (reconstructed): 60 GQA layers, 3..59 sparse with an index-key cache each (full-lifetime,
    # counted as full): 60 + 57 = 117 full caches.
    "minimax-m3": ({"full": 117}, {0: FULL, 2: FULL, 3: FULL, 59: FULL}, None),
    # LFM2-1.2B: full_attn_idxs [2, 5, 8, 10, 12, 14]; the other 10 short conv.
    "lfm2-1.2b": ({"short_conv": 10, "full": 6}, {0: "short_conv", 2: FULL, 14: FULL, 15: "short_conv"}, None),
    # LFM2-8B-A1B: attention at 2, 6, 10, 14, 18, 21; 18 short conv.
    "lfm2-8b-a1b": ({"short_conv": 18, "full": 6}, {2: FULL, 21: FULL, 22: "short_conv"}, None),
    # Qwen3.5-27B: 64 layers, every 4th full -> 16 full, 48 gated delta net.
    "qwen3.5-27b": ({"gdn": 48, "full": 16}, {0: "gdn", 3: FULL, 62: "gdn", 63: FULL}, None),
    # LFM2.5-1.2B-Instruct: LFM2-1.2B's layer_types (attention at 2, 5, 8, 10, 12, 14).
    "lfm2.5-1.2b-instruct": ({"short_conv": 10, "full": 6}, {0: "short_conv", 2: FULL, 14: FULL, 15: "short_conv"},
                             None),
    # LFM2.5-2.6B: 30 layers, attention at 2, 5, 9, 13, 17, 21, 24, 27; 22 short conv.
    "lfm2.5-2.6b": ({"short_conv": 22, "full": 8}, {2: FULL, 9: FULL, 27: FULL, 28: "short_conv", 29: "short_conv"},
                    None),
    # LFM2.5-8B-A1B: LFM2-8B-A1B's layer_types (attention at 2, 6, 10, 14, 18, 21).
    "lfm2.5-8b-a1b": ({"short_conv": 18, "full": 6}, {2: FULL, 21: FULL, 22: "short_conv"}, None),
    # Qwen3.8-27B: Qwen3.5-27B's text geometry, every 4th of 64 layers full.
    "qwen3.8-27b": ({"gdn": 48, "full": 16}, {0: "gdn", 3: FULL, 62: "gdn", 63: FULL}, None),
    # Classic families: full attention on every layer (Falcon 60, DBRX 40, GPT-BigCode 40); StarCoder2's one
    # sliding_window 4096 (below its 16,384 positions) applies to all 40 layers.
    "falcon-40b-instruct": ({"full": 60}, {0: FULL, 59: FULL}, None),
    "dbrx-instruct": ({"full": 40}, {0: FULL, 39: FULL}, None),
    "starcoder": ({"full": 40}, {0: FULL, 39: FULL}, None),
    "starcoder2-15b": ({"sliding": 40}, {0: SLIDING, 39: SLIDING}, 4096),
}


def _kind_at(spec, layer_idx: int):
    """The kind of the first cache layer at `layer_idx` (attention before mixer)."""
    layer = next(c for c in spec.cache_layers if c.layer_idx == layer_idx)
    return layer.kind if isinstance(layer, AttentionDesc) else layer.variant


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_mix_and_positions(name: str) -> None:
    mix, positions, span = CASES[name]
    spec = load_model_spec(name)
    assert spec.layer_mix() == mix
    for idx, kind in positions.items():
        assert _kind_at(spec, idx) == kind, f"{name} layer {idx}"
    for layer in spec.cache_layers:
        if isinstance(layer, AttentionDesc) and layer.kind is SLIDING:
            assert layer.window_len == span
        if isinstance(layer, AttentionDesc) and layer.kind is CHUNKED:
            assert layer.chunk_len == span


def test_falcon_h1_orders_attention_before_mixer_in_each_layer() -> None:
    spec = load_model_spec("falcon-h1-7b")
    assert len(spec.cache_layers) == 88  # 44 layers x (attention + Mamba2)
    first_two = spec.cache_layers[:2]
    assert isinstance(first_two[0], AttentionDesc) and isinstance(first_two[1], RecurrentDesc)
    assert [c.layer_idx for c in spec.cache_layers[:4]] == [0, 0, 1, 1]


def test_gemma3n_kv_sharing_targets() -> None:
    # 35 layers, full where (i+1) % 5 == 0. num_kv_shared_layers 15 -> layers 20..34 store nothing.
    # Owners: 0..19 = 16 sliding + 4 full (4, 9, 14, 19). A shared sliding layer reads layer 18 (last
    # sliding before 20), a shared full layer (24, 29, 34) reads layer 19.
    spec = load_model_spec("gemma-3n-e4b")
    assert spec.layer_mix() == {"sliding": 16, "full": 4, "shared": 15}
    by_idx = {c.layer_idx: c for c in spec.cache_layers}
    assert all(by_idx[i].kv_shared_with is None for i in range(20))
    assert by_idx[20].kv_shared_with == 18 and by_idx[23].kv_shared_with == 18
    assert by_idx[24].kv_shared_with == 19 and by_idx[34].kv_shared_with == 19
    assert by_idx[19].kind is FULL and by_idx[18].kind is SLIDING
    assert by_idx[20].window_len == 512


def test_every_catalog_entry_loads() -> None:
    from hkv.model_specs import catalog_names

    # DSA and DeepSeek-V4 entries are checked in test_sparse_attention_families.py / test_deepseek_v4.py.
    assert set(CASES) | {"gemma-3n-e4b", "nemotron-h-56b-base-8k", "deepseek-v3.2", "glm-5", "glm-5.2",
                         "deepseek-v4-flash"} == set(catalog_names())
    for name in catalog_names():
        spec = load_model_spec(name)
        indices = [c.layer_idx for c in spec.cache_layers]
        assert indices == sorted(indices) and indices[0] >= 0 and indices[-1] < spec.num_hidden_layers
        assert spec.num_params > 0 and spec.max_model_len > 0


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_every_catalog_entry_sizes_its_caches(tp: int) -> None:
    from hkv.model_specs import CacheOptions, catalog_names

    for name in catalog_names():
        for layer, cache in load_model_spec(name).cache_specs(CacheOptions(tp=tp)):
            if cache is None:
                assert layer.kv_shared_with is not None  # only KV-sharing layers own nothing
            elif isinstance(layer, RecurrentDesc):
                assert cache.state_bytes > 0
            else:
                assert cache.bytes_per_token > 0
