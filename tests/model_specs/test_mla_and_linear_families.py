"""Families issue 25 brought into `hkv plan`: latent-attention configs without a layer rule (MiniCPM3,
Sarvam-MLA, AXK1) and linear-attention mixers (OLMo hybrid, Qwen4-Exp gated delta-net).

Every expected byte count is worked out by hand in the comment beside it, from vLLM 0.32's model
code (.venv-vllm): MLAAttention pages kv_lora_rank + qk_rope_head_dim values for one head on every
TP rank; MiniCPM3Attention and DeepseekV2Attention page per-head K and V of qk_nope + qk_rope each
(V zero-padded), split by TP; gated delta-net keeps conv (kernel - 1) x (2 x key_dim + value_dim)
and a recurrent state v_heads x k_head_dim x v_head_dim, both split by TP. The parameter counts are
checked against transformers' own tiny models.
"""

from __future__ import annotations

import pytest

from hkv.model_specs import CacheOptions, load_model_spec
from hkv.model_specs.cache_spec import AttentionCacheSpec, StateCacheSpec
from hkv.model_specs.catalog import find_catalog_entry
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config


def _specs(spec, tp: int, cls):
    return [(layer.layer_idx, s) for layer, s in spec.cache_specs(CacheOptions(tp=tp, kv_dtype_bytes=2))
            if isinstance(s, cls)]


def _sarvam_as_deepseek_v3() -> dict:
    """Sarvam-105B's config under the architecture transformers' default config names."""
    config = find_catalog_entry("sarvam-105b").load_config()
    return {**config, "architectures": ["DeepseekV3ForCausalLM"]}


# name -> (spec loader, tp, attention layers, bytes per token per layer, is_mla)
KV_CASES = {
    # MiniCPM3-4B: 40 heads x (64 + 32) for K and V (V padded 64 -> 96), bf16: 2 x 40 x 96 x 2 = 15,360.
    "minicpm3-tp1": (lambda: load_model_spec("minicpm3-4b"), 1, 62, 15_360, False),
    "minicpm3-tp2": (lambda: load_model_spec("minicpm3-4b"), 2, 62, 7_680, False),  # 20 heads per rank
    # Sarvam-105B (SarvamMLAForCausalLM): latent 512 + rope 64 = 576 x 2 B = 1,152, on every rank.
    "sarvam-tp1": (lambda: load_model_spec("sarvam-105b"), 1, 32, 1_152, True),
    "sarvam-tp8": (lambda: load_model_spec("sarvam-105b"), 8, 32, 1_152, True),
    # The same config named DeepseekV3ForCausalLM: use_mla is false for model_type sarvam_mla, so
    # DeepseekV2Attention pages 64 heads x (128 + 64) for K and V: 2 x 64 x 192 x 2 = 49,152.
    "sarvam-as-deepseek_v3-tp1": (lambda: from_hf_config(_sarvam_as_deepseek_v3(), "s"), 1, 32, 49_152, False),
    "sarvam-as-deepseek_v3-tp2": (lambda: from_hf_config(_sarvam_as_deepseek_v3(), "s"), 2, 32, 24_576, False),
    # A.X K1: latent 512 + rope 64 = 576 x 2 B = 1,152 per token on each of 61 layers, every rank.
    "axk1-tp1": (lambda: load_model_spec("a.x-k1"), 1, 61, 1_152, True),
    "axk1-tp8": (lambda: load_model_spec("a.x-k1"), 8, 61, 1_152, True),
    # OLMo-Hybrid-7B attention: 30 KV heads x 3840 / 30 = 128, K and V: 2 x 30 x 128 x 2 = 15,360.
    "olmo-hybrid-tp1": (lambda: load_model_spec("olmo-hybrid-7b"), 1, 8, 15_360, False),
    "olmo-hybrid-tp2": (lambda: load_model_spec("olmo-hybrid-7b"), 2, 8, 7_680, False),
}


@pytest.mark.parametrize("case", sorted(KV_CASES))
def test_kv_bytes_per_token_per_layer(case: str) -> None:
    load, tp, layers, per_token, is_mla = KV_CASES[case]
    attention = _specs(load(), tp, AttentionCacheSpec)
    assert len(attention) == layers
    assert {s.bytes_per_token for _, s in attention} == {per_token}
    assert {s.is_mla for _, s in attention} == {is_mla}


def test_sarvam_as_deepseek_v3_says_why_it_is_not_mla() -> None:
    spec = from_hf_config(_sarvam_as_deepseek_v3(), "s")
    assert "without MLA" in spec.note


# The GDN keys of transformers 5.24's Qwen4ExpTextConfig() defaults (the text model vLLM serves).
QWEN4_EXP = {
    "architectures": ["Qwen4ExpForCausalLM"], "model_type": "qwen4_exp_text", "hidden_size": 2048,
    "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "vocab_size": 248320, "max_position_embeddings": 32768, "num_experts": 512, "num_experts_per_tok": 10,
    "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "hc_count": 4, "hc_lowrank": 320,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 32, "linear_value_head_dim": 128, "torch_dtype": "bfloat16",
    "layer_types": ["linear_attention"] * 3 + ["indexed_attention"] + ["linear_attention"] * 3 + ["indexed_attention"],
}

# name -> (config loader, tp, recurrent layers, conv shape, ssm shape, dtype bytes, state bytes)
STATE_CASES = {
    # OLMo-Hybrid-7B: key_dim 30 x 96 = 2880, value_dim 30 x 192 = 5760, conv 4.
    # conv 3 x (2 x 2880 + 5760) = 34,560; ssm 30 x 96 x 192 = 552,960; bf16 -> 1,175,040.
    "olmo-hybrid-tp1": (lambda: load_model_spec("olmo-hybrid-7b"), 1, 24, (3, 11_520), (30, 96, 192), (2, 2),
                        1_175_040),
    # TP2: conv 3 x 5760 = 17,280; ssm 15 x 96 x 192 = 276,480 -> x 2 B = 587,520.
    "olmo-hybrid-tp2": (lambda: load_model_spec("olmo-hybrid-7b"), 2, 24, (3, 5_760), (15, 96, 192), (2, 2),
                        587_520),
    # Qwen4-Exp: key_dim 16 x 128 = 2048, value_dim 32 x 128 = 4096: conv 3 x (4096 + 4096) = 24,576;
    # ssm 32 x 128 x 128 = 524,288; bf16 -> 1,097,728 (Qwen3-Next's numbers).
    "qwen4-exp-tp1": (lambda: from_hf_config(QWEN4_EXP, "q"), 1, 6, (3, 8_192), (32, 128, 128), (2, 2),
                      1_097_728),
    # mamba_ssm_dtype float32 (read as Qwen3.5's is): 24,576 x 2 + 524,288 x 4 = 49,152 + 2,097,152.
    "qwen4-exp-fp32-ssm": (lambda: from_hf_config({**QWEN4_EXP, "mamba_ssm_dtype": "float32"}, "q"), 1, 6,
                           (3, 8_192), (32, 128, 128), (2, 4), 2_146_304),
}

# transformers 5.24's LaraMiniConfig() defaults (vLLM 0.32 does not serve LaraMini).
LARA_MINI = {
    "architectures": ["LaraMiniForCausalLM"], "model_type": "lara_mini", "hidden_size": 1024,
    "num_hidden_layers": 34, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 128,
    "vocab_size": 151936, "max_position_embeddings": 131072, "sliding_window": 512, "num_experts": 128,
    "num_experts_per_tok": 4, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 8,
    "linear_num_value_heads": 16, "linear_value_head_dim": 128, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}
# LaraMini: key_dim 8 x 128 = 1024, value_dim 16 x 128 = 2048: conv 3 x (2048 + 2048) = 12,288;
# ssm 16 x 128 x 128 = 262,144; bf16 -> 548,864. 34 layers of period 5 (L S L F S): 14 delta-net layers.
STATE_CASES["lara-mini-tp1"] = (lambda: from_hf_config(LARA_MINI, "l"), 1, 14, (3, 4_096), (16, 128, 128), (2, 2),
                                548_864)


def test_lara_mini_default_pattern_and_attention_bytes() -> None:
    # 4 KV heads x 128, K and V, bf16: 2 x 4 x 128 x 2 = 2,048 B per token; full at i % 5 == 3,
    # sliding (window 512) at i % 5 in (1, 4).
    attention = _specs(from_hf_config(LARA_MINI, "l"), 1, AttentionCacheSpec)
    full = [idx for idx, s in attention if s.kind.value == "full"]
    sliding = [idx for idx, s in attention if s.kind.value == "sliding"]
    assert full == [i for i in range(34) if i % 5 == 3]
    assert sliding == [i for i in range(34) if i % 5 in (1, 4)]
    assert {(s.bytes_per_token, s.window_len) for _, s in attention if s.kind.value == "sliding"} == {(2_048, 512)}


@pytest.mark.parametrize("case", sorted(STATE_CASES))
def test_recurrent_state_bytes(case: str) -> None:
    load, tp, layers, conv, ssm, dtype_bytes, state_bytes = STATE_CASES[case]
    states = _specs(load(), tp, StateCacheSpec)
    assert len(states) == layers
    assert {s.shapes for _, s in states} == {(conv, ssm)}
    assert {s.dtype_bytes for _, s in states} == {dtype_bytes}
    assert {s.state_bytes for _, s in states} == {state_bytes}


def test_qwen4_exp_indexed_attention_without_an_indexer_is_full_attention() -> None:
    # 2 KV heads x 256, K and V, bf16: 2 x 2 x 256 x 2 = 2,048 B per token on layers 3 and 7.
    attention = _specs(from_hf_config(QWEN4_EXP, "q"), 1, AttentionCacheSpec)
    assert [idx for idx, _ in attention] == [3, 7]
    assert {(s.kind.value, s.bytes_per_token) for _, s in attention} == {("full", 2_048)}


def test_olmo_hybrid_without_layer_types_follows_its_config_class() -> None:
    """OlmoHybridConfig: full attention where i % 4 == 3; the last layer when that leaves none."""
    base = find_catalog_entry("olmo-hybrid-7b").load_config()
    config = {k: v for k, v in base.items() if k != "layer_types"}
    spec = from_hf_config(config, "o")
    assert [idx for idx, _ in _specs(spec, 1, AttentionCacheSpec)] == [3, 7, 11, 15, 19, 23, 27, 31]
    short = from_hf_config({**config, "num_hidden_layers": 2}, "o2")
    assert [idx for idx, _ in _specs(short, 1, AttentionCacheSpec)] == [1]


@pytest.mark.parametrize(("extra", "named"), [
    ({"indexer_n_heads": 4, "indexer_kv_heads": 1, "indexer_head_dim": 128, "indexer_budget": 2048,
      "indexer_compress_ratio": 4}, "QSA"),
    ({"ple_layer_ids": [1, 2]}, "ple_layer_ids"),
])
def test_qwen4_exp_caches_hkv_does_not_model_are_refused(extra: dict, named: str) -> None:
    with pytest.raises(InvalidConfigError, match=named):
        from_hf_config({**QWEN4_EXP, **extra}, "q")


TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=256,
            intermediate_size=96, max_position_embeddings=512, pad_token_id=0, bos_token_id=1, eos_token_id=2)
_MOE = dict(n_routed_experts=4, moe_intermediate_size=32, n_group=1, topk_group=1, num_experts_per_tok=2)
_LATENT = dict(kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16)
PARAM_CASES: dict[str, dict] = {
    "minicpm3": dict(num_hidden_layers=2, num_key_value_heads=4, q_lora_rank=24, **_LATENT),
    "axk1": dict(num_hidden_layers=3, q_lora_rank=24, mlp_layer_types=["dense", "sparse", "sparse"], **_LATENT,
                 **_MOE),
    "sarvam_mla": dict(head_dim=None, num_hidden_layers=3, q_lora_rank=None, first_k_dense_replace=1, **_LATENT,
                       **_MOE),
    "olmo_hybrid": dict(head_dim=None, num_hidden_layers=4, linear_num_key_heads=2, linear_num_value_heads=4,
                        linear_key_head_dim=16, linear_value_head_dim=8),
    # transformers always builds the QSA indexer; hkv counts the model vLLM serves without it.
    "lara_mini": dict(num_hidden_layers=3, layer_types=["linear_attention", "sliding_attention", "full_attention"],
                      sliding_window=32, num_experts=3, num_experts_per_tok=2, moe_intermediate_size=24,
                      shared_expert_intermediate_size=40, linear_num_key_heads=2, linear_num_value_heads=2,
                      linear_key_head_dim=8, linear_value_head_dim=16),
    # Untied, 3 streams, the indexed layer first: every block of the count shows at its own size.
    "qwen4_exp_text": dict(num_hidden_layers=3, layer_types=["indexed_attention", "linear_attention",
                                                             "linear_attention"],
                           num_experts=3, num_experts_per_tok=1, moe_intermediate_size=24,
                           shared_expert_intermediate_size=40, linear_num_key_heads=2, linear_num_value_heads=2,
                           linear_key_head_dim=8, linear_value_head_dim=16, hc_count=3, hc_lowrank=4,
                           indexer_n_heads=1, indexer_kv_heads=1, indexer_head_dim=16, indexer_budget=12,
                           indexer_compress_ratio=3, tie_word_embeddings=False),
}
_INDEXER_KEYS = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget", "indexer_compress_ratio")


@pytest.mark.parametrize("family", sorted(PARAM_CASES))
def test_param_count_equals_transformers(family: str) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    kwargs = {k: v for k, v in {**TINY, **PARAM_CASES[family]}.items() if v is not None}
    config = transformers.AutoConfig.for_model(family, **kwargs)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    theirs = sum(p.numel() for name, p in model.named_parameters() if ".indexer." not in name)
    raw = {k: v for k, v in config.to_dict().items() if k not in _INDEXER_KEYS}
    assert from_hf_config(raw, family).num_params == theirs


def test_reconstructed_catalog_totals_match_published_figures() -> None:
    # Sarvam-105B: 106.0 B from its config (public write-up of the released config.json); A.X K1: the
    # 519 B total SK Telecom publishes. Both catalog entries are reconstructions, so agreeing to 1 %
    # checks the reconstruction as much as the count.
    published = {"sarvam-105b": 106.0e9, "a.x-k1": 519e9}
    for name, total in published.items():
        assert abs(load_model_spec(name).num_params / total - 1) < 0.01, name
