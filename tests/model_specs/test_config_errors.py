"""Configs hkv cannot interpret fail loudly, naming the attribute and the value."""

from __future__ import annotations

import pytest

from hkv.model_specs import InvalidConfigError, from_hf_config


def _gemma2(**overrides) -> dict:
    base = {"model_type": "gemma2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96, "vocab_size": 256,
            "max_position_embeddings": 512, "sliding_window": 32}
    return {**base, **overrides}


@pytest.mark.parametrize(("config", "fragments"), [
    (_gemma2(layer_types=["sliding_attention", "foo_attention"]), ["layer_types[1]", "'foo_attention'"]),
    (_gemma2(layer_types=["sliding_attention"]), ["layer_types has 1 entries", "num_hidden_layers is 2"]),
    # A recurrent layer in a family without a recurrent mixer is rejected, not guessed.
    (_gemma2(layer_types=["sliding_attention", "linear_attention"]), ["layer_types[1]", "'gemma2'"]),
    (_gemma2(model_type="nemotron_h", hybrid_override_pattern="M*X", mamba_num_heads=8, mamba_head_dim=16,
             ssm_state_size=16), ["hybrid_override_pattern[2]", "'X'"]),
    (_gemma2(model_type="minimax", attn_type_list=[1, 2]), ["attn_type_list[1]", "2"]),
    (_gemma2(model_type="bamba", attn_layer_indices=[5]), ["attn_layer_indices", "[5]"]),
    # Unknown family with hybrid attributes: no silent full-attention guess.
    (_gemma2(model_type="mystery"), ["'mystery'", "sliding_window"]),
    (_gemma2(head_dim=None, hidden_size=None), ["hidden_size"]),
    (_gemma2(torch_dtype="float7"), ["torch_dtype='float7'"]),
])
def test_errors_name_the_attribute(config: dict, fragments: list[str]) -> None:
    with pytest.raises(InvalidConfigError) as err:
        from_hf_config(config, "bad")
    for fragment in fragments:
        assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_family_without_hybrid_attributes_is_full_attention_with_a_note() -> None:
    spec = from_hf_config(_gemma2(model_type="mystery", sliding_window=None), "plain")
    assert spec.layer_mix() == {"full": 2}
    assert "no layer rule" in spec.note and "estimate" in spec.note


def test_unknown_family_with_attention_only_layer_types_is_accepted() -> None:
    config = _gemma2(model_type="mystery", layer_types=["sliding_attention", "full_attention"])
    spec = from_hf_config(config, "m")
    assert spec.layer_mix() == {"sliding": 1, "full": 1}


def test_text_config_overrides_top_level() -> None:
    text = {**_gemma2(model_type="gemma3_text"), "sliding_window_pattern": 2}
    wrapper = {"model_type": "gemma3", "hidden_size": 9999, "text_config": text}
    spec = from_hf_config(wrapper, "wrapped")
    assert spec.hidden_size == 64 and spec.model_type == "gemma3"
    assert spec.layer_mix() == {"sliding": 1, "full": 1}  # pattern 2: layer 1 full
