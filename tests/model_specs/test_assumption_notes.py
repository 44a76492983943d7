"""Every value hkv assumes for a partial config is visible in ModelSpec.note; config values win."""

from __future__ import annotations

from hkv.model_specs import from_hf_config, load_model_spec


def test_granite_assumptions_come_from_catalog_annotations() -> None:
    spec = load_model_spec("granite-4.0-h-small")
    assert spec.max_model_len == 131_072  # _assumed_max_position_embeddings, not the class default 2048
    assert "_assumed_layer_types" in spec.note and "_assumed_max_position_embeddings" in spec.note
    assert "mamba_n_heads absent: used the granitemoehybrid default 128" in spec.note
    assert not spec.verified


def test_sparse_gemma3_text_config_uses_class_defaults_with_notes() -> None:
    spec = load_model_spec("gemma-3-27b")
    assert spec.vocab_size == 262_208 and spec.max_model_len == 131_072  # Gemma3TextConfig defaults
    assert "vocab_size absent: used the gemma3_text default 262208" in spec.note
    assert "language model only" in spec.note


def test_config_value_beats_assumed_annotation() -> None:
    config = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
              "intermediate_size": 96, "vocab_size": 256, "max_position_embeddings": 512,
              "_assumed_max_position_embeddings": 4096}
    spec = from_hf_config(config, "t")
    assert spec.max_model_len == 512 and "_assumed" not in spec.note


def test_complete_config_has_no_notes() -> None:
    assert load_model_spec("llama-3.1-8b").note == ""
    assert load_model_spec("qwen3-8b").note == ""


def test_nemotron_h_ssm_dtype_default_is_noted() -> None:
    spec = load_model_spec("nemotron-h-8b-base-8k")
    assert "mamba_ssm_cache_dtype absent: used the nemotron_h default 'float32'" in spec.note
