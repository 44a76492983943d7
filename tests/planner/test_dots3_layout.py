"""dots3 (model_specs/padded_latent_layers.py): DSA layers beside sliding MLA layers, by hand.

transformers' default Dots3NoteTextConfig: 46 layers, "indexed_attention" at 0, 1, 5, 9, ..., 45
(13), "sliding_attention" elsewhere (33, window 512); the sliding layers' kv_lora_rank 1024 + rope 64
= 1,088 is every latent's width (vLLM pads the DSA latent to it). bf16, 64-token blocks (the DSA
indexer backend's): latent page 1,088 x 2 x 64 = 139,264 B; indexer keys 132 x 64 = 8,448 B.

Packed groups: full (13 latents + 13 indexers, balanced: floor 13) = 1,920,256 B; sliding 33 x
139,264. Repeats: the d in 13..33 with least padding of [13, 33] is 17 (4 + 1), so the sliding
bucket splits in cdiv(33, 17) = 2: 17 (2,367,488 B, the block) and 16.
40 GiB // 2,367,488 = 18,141 blocks. At L = 131,072, T = 16,384: full cdiv(L, 64) = 2,048; each
sliding group cdiv(511 + 16,384, 64) + 1 = 265: 2,578 a request -> 7.04x, 922,334 tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.compressed_attention_layout import approximate_gcd
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

CONFIG = json.loads((Path(__file__).resolve().parents[1] / "data" / "configs" / "dots3_note_text.json").read_text())
GIB = 2**30


def test_caches_by_hand() -> None:
    model = from_hf_config(CONFIG, "dots3")
    specs = {layer.name: layer.cache_spec(CacheOptions(kv_dtype_bytes=2, tp=8)) for layer in model.cache_layers}
    assert list(specs)[:4] == ["layers.0.indexer", "layers.0.attn", "layers.1.indexer", "layers.1.attn"]
    assert sum(name.endswith(".indexer") for name in specs) == 13
    latent, keys, window = specs["layers.0.attn"], specs["layers.0.indexer"], specs["layers.2.attn"]
    assert (latent.kind, latent.page_size_bytes(64)) == (CacheKind.FULL, 139_264)  # replicated over TP
    assert (keys.kind, keys.page_size_bytes(64)) == (CacheKind.FULL, 8_448)
    assert (window.kind, window.window_len, window.page_size_bytes(64)) == (CacheKind.SLIDING, 512, 139_264)
    assert "swa_kv_lora_rank absent" in model.note


def test_vllm_layout_by_hand() -> None:
    assert approximate_gcd([13, 33], 13) == 17
    p = plan(from_hf_config(CONFIG, "dots3"), PlanConfig(gpu="h100", available_kv_memory_bytes=40 * GIB,
                                                         max_model_len=131_072, primary_layout="vllm"))
    layout = p.reports["vllm"].layout
    assert p.block.block_size == 64
    assert [(g.kind, g.block_size, g.num_layers) for g in layout.groups] == [
        (CacheKind.FULL, 64, 26), (CacheKind.SLIDING, 64, 17), (CacheKind.SLIDING, 64, 16)]
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (2_367_488, 18_141)
    assert layout.blocks_per_request(131_072) == (2_048, 265, 265)
    assert layout.kv_cache_tokens(131_072) == 922_334
    assert "bounded_replay" in p.skipped["vllm-no-hybrid"]


def test_checkpoint_keys_win() -> None:
    """vLLM reads swa_kv_lora_rank / swa_qk_rope_head_dim / sliding_window_size (checkpoint keys)."""
    config = {**CONFIG, "swa_kv_lora_rank": 512, "swa_qk_rope_head_dim": 64, "sliding_window_size": 1024}
    model = from_hf_config(config, "dots3")
    spec = next(layer for layer in model.cache_layers if layer.name == "layers.2.attn").cache_spec(CacheOptions())
    assert (spec.window_len, spec.page_size_bytes(64)) == (1024, 576 * 2 * 64)


def test_mtp_layers_are_left_out_with_a_note() -> None:
    model = from_hf_config({**CONFIG, "num_nextn_predict_layers": 1}, "dots3")
    assert model.draft_layers == ()
    assert "MTP layer(s) are not planned" in model.note
