"""Parameter counts of MiniMax-M2.x, MiMo-V2-Flash and Step-3.5/3.7-Flash against independent figures.

- the published totals of the released checkpoints (tests/fixtures/real_configs/), each with the
  source and its rounding; hkv's count excludes the MTP layers, which the totals below also leave out;
- transformers 5.24's own models (MiniMaxM2ForCausalLM, MiMoV2FlashForCausalLM, Step3p7TextModel +
  lm_head) built tiny from their config classes, counted with `sum(p.numel())`;
- Step-3.7-Flash's fixture, a flattened copy without attention_other_setting or
  use_head_wise_attn_gate, worked by hand.
And: the breakdown of each lists every weight (exact, summing to the count), with the linears by role
so quantized formats and TP sharding see the experts.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hkv.model_specs.from_hf_config import from_hf_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real_configs"


def _spec(name: str, **overrides):
    config = json.loads((FIXTURES / f"{name}.json").read_text())
    return from_hf_config({**config, **overrides}, name)


# (fixture, lowest and highest count the published figure allows)
PUBLISHED = [
    # MiniMax-M2 / M2.5 / M2.7 model cards: "230 billion total parameters" (the nearest 10B).
    ("MiniMaxAI__MiniMax-M2.5", 225e9, 235e9),
    ("MiniMaxAI__MiniMax-M2.7", 225e9, 235e9),
    # MiMo-V2-Flash model card: "309B total parameters" (the nearest 1B).
    ("XiaomiMiMo__MiMo-V2-Flash", 308.5e9, 309.5e9),
]


@pytest.mark.parametrize(("name", "low", "high"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_count_matches_the_published_total(name: str, low: float, high: float) -> None:
    assert low <= _spec(name).num_params < high


# Step-3.7-Flash's text model as its released config describes it (text_config keys of
# stepfun-ai/Step-3.7-Flash, as vLLM and transformers read them): 96 query heads on the sliding
# layers, the head-wise gate, MoE on layers 3-44.
STEP37_RELEASED = dict(attention_other_setting={"attention_type": "sliding_attention", "num_attention_heads": 96,
                                                "num_attention_groups": 8, "head_dim": 128},
                       use_head_wise_attn_gate=True, moe_layers_enum=",".join(str(i) for i in range(3, 45)))

H, V = 4096, 128896
FULL_ATTN = H * (64 + 16) * 128 + 64 * 128 * H + 2 * 128  # q|k|v, o, q_norm + k_norm
SWA_96 = H * (96 + 16) * 128 + 96 * 128 * H + 2 * 128
MOE = H * 288 + 288 * 3 * H * 1280 + 3 * H * 1280  # gate, 288 experts, shared expert
DENSE = 3 * H * 11264
NORMS = 2 * H


def test_step37_released_form_by_hand_and_published() -> None:
    """12 full (64 heads) + 33 sliding (96 heads) layers, each with g_proj (hidden -> heads); 3 dense
    + 42 MoE MLPs; embeddings and an untied lm_head. Step-3.5-Flash's card (same text model; NVIDIA NIM
    model card, "196.81B total parameters", two decimals) and Step-3.7-Flash's ("196B language
    backbone + 1.8B vision encoder") agree within 0.1%."""
    expected = (2 * V * H + H + 12 * (FULL_ATTN + H * 64) + 33 * (SWA_96 + H * 96) + 3 * DENSE + 42 * MOE
                + 45 * NORMS)
    count = _spec("stepfun-ai__Step-3.7-Flash", **STEP37_RELEASED).num_params
    assert count == expected == 196_956_118_272
    assert abs(count - 196.81e9) < 0.001 * 196.81e9


def test_step37_fixture_by_hand() -> None:
    """The fixture has neither attention_other_setting nor use_head_wise_attn_gate: vLLM's step3p5.py
    then builds 64 heads on every layer and no g_proj; first_k_dense_replace 3 places the MoE."""
    spec = _spec("stepfun-ai__Step-3.7-Flash")
    assert spec.num_params == 2 * V * H + H + 45 * FULL_ATTN + 3 * DENSE + 42 * MOE + 45 * NORMS
    assert "use_head_wise_attn_gate absent" in spec.note


def test_step37_released_layer_types_with_mtp_tail() -> None:
    """The released config lists 48 layer_types (45 + 3 MTP) and num_attention_groups for the KV heads."""
    config = json.loads((FIXTURES / "stepfun-ai__Step-3.7-Flash.json").read_text())
    heads = config.pop("num_key_value_heads")
    layer_types = config["layer_types"] + ["full_attention", "sliding_attention", "sliding_attention"]
    spec = from_hf_config({**config, **STEP37_RELEASED, "layer_types": layer_types,
                           "num_attention_groups": heads}, "step37-released")
    layers = spec.cache_layers
    assert len(layers) == 45
    assert sum(1 for layer in layers if layer.window_len == 512) == 33
    assert {(layer.num_kv_heads, layer.head_dim) for layer in layers} == {(8, 128)}


def test_step37_refuses_other_sliding_kv_geometry() -> None:
    from hkv.model_specs.errors import InvalidConfigError

    with pytest.raises(InvalidConfigError, match="one K/V geometry"):
        _spec("stepfun-ai__Step-3.7-Flash",
              attention_other_setting={"attention_type": "sliding_attention", "num_attention_heads": 96,
                                       "num_attention_groups": 4})


@pytest.mark.parametrize("name", ["MiniMaxAI__MiniMax-M2.7", "XiaomiMiMo__MiMo-V2-Flash",
                                  "stepfun-ai__Step-3.7-Flash"])
def test_breakdown_is_exact_and_lists_experts_by_role(name: str) -> None:
    spec = _spec(name)
    breakdown = spec.param_breakdown
    assert breakdown.exact
    assert breakdown.num_params(("language_model",)) == spec.num_params
    roles = {w.role for w in breakdown.linears}
    assert {"experts_w13", "experts_w2", "lm_head", "linear"} <= roles
    experts = [w for w in breakdown.linears if w.role == "experts_w13"]
    assert all(w.count in (256, 288) for w in experts)


def test_minimax_m2_names_match_the_modelopt_exclude_list() -> None:
    """nvidia/MiniMax-M2.5-NVFP4 excludes model.layers.N.block_sparse_moe.gate and self_attn*."""
    breakdown = _spec("MiniMaxAI__MiniMax-M2.7").param_breakdown
    names = {w.module for w in (*breakdown.linears, *breakdown.dense)}
    assert {"model.layers.0.block_sparse_moe.gate", "model.layers.0.block_sparse_moe.experts",
            "model.layers.61.self_attn.q_proj"} <= names


# --- transformers' own models, tiny ---------------------------------------------------------------

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=256,
            intermediate_size=96, max_position_embeddings=512, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())


def test_minimax_m2_equals_transformers() -> None:
    config = transformers.AutoConfig.for_model("minimax_m2", **TINY, num_hidden_layers=2, num_local_experts=4,
                                               num_experts_per_tok=2)
    torch.manual_seed(0)
    expected = _count(transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config)))
    assert from_hf_config(config.to_dict(), "tiny-minimax-m2").num_params == expected


def test_mimo_v2_flash_equals_transformers() -> None:
    """transformers' form: layer_types / mlp_layer_types, sliding layers at twice the KV heads with sinks."""
    config = transformers.AutoConfig.for_model(
        "mimo_v2_flash", **{**TINY, "head_dim": 24}, v_head_dim=16, num_hidden_layers=3, n_routed_experts=4,
        moe_intermediate_size=32, num_experts_per_tok=2, sliding_window=33,
        layer_types=["full_attention", "sliding_attention", "sliding_attention"],
        mlp_layer_types=["dense", "sparse", "sparse"])
    torch.manual_seed(0)
    expected = _count(transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config)))
    assert from_hf_config(config.to_dict(), "tiny-mimo-v2").num_params == expected


def test_mimo_v2_flash_vllm_form_equals_transformers() -> None:
    """The released form (hybrid_layer_pattern, swa_* keys, moe_layer_freq) of the same tiny model."""
    config = transformers.AutoConfig.for_model(
        "mimo_v2_flash", **{**TINY, "head_dim": 24}, v_head_dim=16, num_hidden_layers=3, n_routed_experts=4,
        moe_intermediate_size=32, num_experts_per_tok=2, layer_types=["full_attention", "sliding_attention",
                                                                     "sliding_attention"],
        mlp_layer_types=["dense", "sparse", "sparse"])
    torch.manual_seed(0)
    expected = _count(transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config)))
    released = {k: v for k, v in config.to_dict().items() if k not in ("layer_types", "mlp_layer_types")}
    released.update(hybrid_layer_pattern=[0, 1, 1], moe_layer_freq=[0, 1, 1], swa_num_attention_heads=4,
                    swa_num_key_value_heads=4, swa_head_dim=24, swa_v_head_dim=16, sliding_window_size=32,
                    add_swa_attention_sink_bias=True, add_full_attention_sink_bias=False)
    assert from_hf_config(released, "tiny-mimo-v2-released").num_params == expected


def test_step3p7_text_equals_transformers() -> None:
    """Step3p7TextModel + the lm_head Step3p7ForConditionalGeneration puts on it (the vision tower aside);
    sliding layers at other query heads, as attention_other_setting gives them."""
    from transformers.models.step3p7 import modeling_step3p7 as m

    config = m.Step3p7TextConfig(
        **{k: v for k, v in TINY.items() if k != "bos_token_id"}, num_hidden_layers=4, n_routed_experts=4,
        moe_intermediate_size=32, share_expert_dim=40, num_experts_per_tok=2, sliding_window=16,
        layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
        attention_other_setting={"attention_type": "sliding_attention", "num_attention_heads": 6},
        moe_layers_enum="2,3")
    torch.manual_seed(0)
    expected = _count(m.Step3p7TextModel(copy.deepcopy(config))) + TINY["vocab_size"] * TINY["hidden_size"]
    hf = {**config.to_dict(), "use_head_wise_attn_gate": True}  # transformers always builds g_proj
    assert from_hf_config(hf, "tiny-step3p7").num_params == expected
