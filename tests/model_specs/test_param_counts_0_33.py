"""Exact parameter counts of vLLM 0.33's Dory, AliceAI, dots3 and Muse Spark (were Llama-shaped estimates).

Expected figures are worked by hand from the module shapes in the vllm-0.33.0 wheel (lines cited in
each test) or taken from transformers 5.24 models built from tiny configs, where transformers builds
the same weights.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
