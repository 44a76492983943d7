"""Exact parameter counts of vLLM 0.33's Dory, AliceAI, dots3 and Muse Spark (were Llama-shaped estimates).

Expected figures are worked by hand from the module shapes in the vllm-0.33.0 wheel (lines cited in
each test) or taken from transformers 5.24 models built from tiny configs, where transformers builds
the same weights.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _transformers_count(model: object) -> int:
    return sum(p.numel() for p in model.parameters())  # type: ignore[attr-defined]


def test_dory_by_hand() -> None:
    """vllm/model_executor/models/dory.py, DoryConfig defaults (hidden 2,560, 16 heads x 256, 4 KV heads,
    intermediate 7,168, vocab 131,072; 36 attention + 36 "mlp" layers). Attention sublayer (l.69-94, l.218):
    q, g_proj and o 3 x 2,560 x 4,096 = 31,457,280, k + v 2 x 2,560 x 1,024 = 5,242,880, sqk + s_gate
    2 x 4,096, attn_alpha 2,560: 36,710,912. MLP sublayer (l.171-186, l.221): 3 x 2,560 x 7,168 =
    55,050,240 + suv_gate + suv_up 2 x 7,168 + mlp_alpha 2,560 = 55,067,136. 36 x 91,778,048 =
    3,304,009,728; + embedding and lm_head 2 x 335,544,320 + logit_scale 131,072 (l.303-309) =
    3,975,229,440 (no norm weights: justnorm)."""
    assert from_hf_config(_config("dory"), "dory").num_params == 3_975_229_440


def test_dory_equals_transformers_with_sublayers_paired() -> None:
    """transformers' Dory layer holds attention + MLP (lambda_1 / lambda_2 for the two alphas); vLLM's
    holds one of them (attn_alpha or mlp_alpha). So vLLM's 6 alternating layers weigh what
    transformers' 3 layers weigh."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.DoryConfig(
        vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        n_input_layers=1, n_recurrent_layers=1, n_output_layers=1, n_recurrent_loops=2)
    expected = _transformers_count(transformers.DoryForCausalLM(cfg))
    vllm_layout = {**cfg.to_dict(), "num_hidden_layers": 6, "n_input_layers": 2, "n_recurrent_layers": 2,
                   "n_output_layers": 2,
                   "layer_types": ["sliding_attention", "mlp", "full_attention", "mlp", "sliding_attention", "mlp"]}
    assert from_hf_config(vllm_layout, "tiny-dory").num_params == expected


def test_alice_ai_by_hand() -> None:
    """vllm/model_executor/models/alice_ai.py on the fixture (hidden 2,048; 36 KDA + 12 full layers; KDA 32 heads
    x 128, kernel 4; full 16 heads x 256, 2 KV heads; 512 experts x 512 + a 512 shared expert; vocab 129,024).
    KDA (kimi_gdn_linear_attn.py l.207-306): q/k/v 3 x 2,048 x 4,096 = 25,165,824, conv1d 3 x 4,096 x 4 = 49,152,
    f_a/f_b and g_a/g_b 2 x (2,048 x 128 + 128 x 4,096) = 1,572,864, dt_bias 4,096, A_log 32, beta 2,048 x 32 =
    65,536, o_norm 128, o_proj 8,388,608: 35,246,240. Full (Qwen3NextAttention, gate on): q + gate 2,048 x 8,192 =
    16,777,216, k + v 2 x 2,048 x 512 = 2,097,152, o 8,388,608, q/k norms 512: 27,263,488. MoE (l.236-269):
    router 1,048,576 + experts 512 x 3 x 2,048 x 512 = 1,610,612,736 + shared_expert_gate 2,048 + shared
    3 x 2,048 x 512 = 3,145,728: 1,614,809,088. Per layer 2 norms + mlp_res (proj + norm) = 8,192, and
    attn_res 4,096 on layers 1..47. Layers: 36 x 1,650,063,520 + 12 x 1,642,080,768 + 47 x 4,096 =
    59,402,286,720 + 19,704,969,216 + 192,512 = 79,107,448,448. + embedding and untied lm_head
    2 x 264,241,152, final norm 2,048, attnres_final 4,096 = 79,635,936,896."""
    assert from_hf_config(_config("alice_ai"), "alice").num_params == 79_635_936_896


def test_alice_ai_without_shared_expert() -> None:
    """shared_expert_intermediate_size 0: no shared expert (l.252-256), its gate stays (l.245):
    48 x 3,145,728 = 150,994,944 fewer."""
    config = {**_config("alice_ai"), "shared_expert_intermediate_size": 0}
    assert from_hf_config(config, "alice").num_params == 79_635_936_896 - 150_994_944


# dots3 in the checkpoint's spelling (vLLM's Dots3NoteConfig reads swa_* and first_k_dense_replace);
# transformers' Dots3NoteTextConfig folds the same keys into per_layer_config and mlp_layer_types.
TINY_DOTS3 = {
    "model_type": "dots3_note_text", "architectures": ["Dots3NoteForCausalLM"], "vocab_size": 97, "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 32,
    "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8, "head_dim": 16, "n_routed_experts": 4,
    "n_shared_experts": 1, "moe_intermediate_size": 24, "num_experts_per_tok": 2, "index_n_heads": 2, "index_head_dim": 16,
    "index_topk": 4, "first_k_dense_replace": 2, "swa_num_attention_heads": 2, "swa_num_key_value_heads": 2, "swa_q_lora_rank": 24,
    "swa_kv_lora_rank": 12, "swa_head_dim": 20, "swa_qk_nope_head_dim": 12, "swa_qk_rope_head_dim": 8, "swa_v_head_dim": 10,
    "sliding_window_size": 8, "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
    "layer_types": ["indexed_attention", "indexed_attention", "sliding_attention", "sliding_attention",
                 "sliding_attention", "indexed_attention"]}


def _tiny_dots3_transformers(**changes: object) -> tuple:
    transformers = pytest.importorskip("transformers")
    keys = {k: v for k, v in TINY_DOTS3.items() if k not in ("model_type", "architectures")}
    return transformers, transformers.Dots3NoteTextConfig(**{**keys, **changes}, shared_experts_intermediate_size=24)


def test_dots3_checkpoint_keys_equal_transformers() -> None:
    transformers, cfg = _tiny_dots3_transformers()
    expected = _transformers_count(transformers.Dots3NoteForCausalLM(cfg))
    assert from_hf_config(TINY_DOTS3, "tiny-dots3").num_params == expected


def test_dots3_transformers_spelling_equals_transformers() -> None:
    """per_layer_config + mlp_layer_types (dense layers 0, 2, 5), tied embeddings."""
    transformers, cfg = _tiny_dots3_transformers(
        first_k_dense_replace=None, tie_word_embeddings=True,
        mlp_layer_types=["dense", "sparse", "dense", "sparse", "sparse", "dense"])
    expected = _transformers_count(transformers.Dots3NoteForCausalLM(cfg))
    assert from_hf_config(cfg.to_dict(), "tiny-dots3").num_params == expected


def test_dots3_fixture_equals_transformers() -> None:
    """The 46-layer fixture (transformers' default geometry), built on the meta device: 279,551,718,016."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    raw = _config("dots3_note_text")
    cfg = transformers.Dots3NoteTextConfig(
        **{k: v for k, v in raw.items() if k not in ("architectures", "model_type", "transformers_version")})
    with torch.device("meta"):
        expected = _transformers_count(transformers.Dots3NoteForCausalLM(cfg))
    assert expected == 279_551_718_016
    assert from_hf_config(raw, "dots3").num_params == expected


def test_dots3_elementwise_gate_by_hand() -> None:
    """attention_gate_type other than "headwise" widens g_proj to heads x v_head_dim (model.py l.309-320;
    transformers builds only headwise): 3 indexed layers x 64 x (4 x 8 - 4) = 5,376 more; the sliding layers
    read their own swa_attention_gate_type (l.414): 3 x 64 x (2 x 10 - 2) = 3,456 more with it."""
    headwise = from_hf_config(TINY_DOTS3, "tiny-dots3").num_params
    assert from_hf_config({**TINY_DOTS3, "attention_gate_type": "elementwise"}, "t").num_params == headwise + 5_376
    both = {**TINY_DOTS3, "attention_gate_type": "elementwise", "swa_attention_gate_type": "elementwise"}
    assert from_hf_config(both, "t").num_params == headwise + 5_376 + 3_456


def test_muse_spark_by_hand() -> None:
    """models/muse_spark/nvidia/model.py on the fixture (hidden 5,120; 48 layers, all "sparse"; 40 heads x 128,
    8 KV heads; 8 experts x 5,120 at moe_hidden_size 4,096; vocab 202,048; untied). Attention (l.1045-1080):
    q + o_gate 2 x 5,120 x 5,120 = 52,428,800, k + v 2 x 5,120 x 1,024 = 10,485,760, o 26,214,400:
    89,128,960. pre_qkv_proj_norm, pre_ffn_norm, post_ffn_norm 3 x 5,120 and residual gates 2 x 5,120
    (l.1342-1420). MoE (l.422-610): router 8 x 5,120 = 40,960, pooler + unpooler 2 x 5,120 x 4,096 =
    41,943,040, pre/post expert norms 2 x 4,096, experts 8 x 3 x 4,096 x 5,120 = 503,316,480: 545,308,672.
    Layer 634,463,232 x 48 = 30,454,235,136; + embedding and lm_head 2 x 1,034,485,760 + final norm 5,120 =
    32,523,211,776."""
    assert from_hf_config(_config("muse_spark"), "muse").num_params == 32_523_211_776


def test_muse_spark_equals_transformers() -> None:
    """MuseSparkTextModel plus MuseSparkForConditionalGeneration's lm_head (hidden x vocab, untied)."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.MuseSparkTextConfig(
        vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, moe_intermediate_size=24, num_local_experts=6, num_experts_per_tok=2,
        moe_hidden_size=40, layer_types=["sliding_attention", "full_attention"] * 2,
        mlp_layer_types=["dense", "sparse", "sparse", "dense"], sliding_window=8, max_position_embeddings=64,
        pad_token_id=0, bos_token_id=1, eos_token_id=2)
    expected = _transformers_count(transformers.MuseSparkTextModel(cfg)) + 64 * 97
    assert from_hf_config(cfg.to_dict(), "tiny-muse").num_params == expected


def test_muse_spark_needs_mlp_layer_types() -> None:
    config = _config("muse_spark")
    config["text_config"] = {k: v for k, v in config["text_config"].items() if k != "mlp_layer_types"}
    with pytest.raises(InvalidConfigError, match="mlp_layer_types must be 48 entries"):
        from_hf_config(config, "muse")
