"""The parameter breakdown (weights by shape, part and TP split) against independent counts.

- language model: the breakdown's total equals count_params, itself checked against transformers
  (test_param_count_vs_transformers.py), for every catalog config;
- vision towers: transformers' own tower (and projector) classes built from tiny configs with random
  weights, counted with `sum(p.numel())`;
- Qwen3.5-9B: the checkpoint's total_size (19,306,216,416 B, quoted with the config's source) against
  (language model + vision + MTP) x 2 bytes;
- Gemma 4 E2B towers: the audio (0.614 GB) and vision (0.337 GB) bf16 bytes the QAT checkpoint's
  safetensors header lists (github:xbill9/sagemaker-gemma@6c18089f
  docs/articles/evidence/qat-safetensors-header.txt, three decimals of GB).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.model_specs.from_hf_config import from_hf_config

ROOT = Path(__file__).resolve().parents[2]
CATALOG = sorted((ROOT / "model_specs" / "catalog").glob("*.json"))
STARTUP_CONFIGS = ROOT / "tests" / "data" / "vllm_startups" / "configs"


@pytest.mark.parametrize("path", CATALOG, ids=lambda p: p.stem)
def test_language_model_part_adds_up_to_the_checked_parameter_count(path: Path) -> None:
    spec = from_hf_config(json.loads(path.read_text()), path.stem)
    assert spec.param_breakdown is not None
    assert spec.param_breakdown.num_params(("language_model",)) == spec.num_params


def test_qwen3_5_9b_parts_match_the_published_checkpoint_size() -> None:
    # total_size 19,306,216,416 bytes of bf16 tensors (Qwen/Qwen3.5-9B revision c2022362, as the
    # fixture the config was taken from quotes it); MTP and the vision tower included.
    spec = from_hf_config(json.loads((STARTUP_CONFIGS / "qwen3.5-9b.json").read_text()), "qwen3.5-9b")
    total_bytes = 2 * spec.param_breakdown.num_params()
    assert abs(total_bytes - 19_306_216_416) / 19_306_216_416 < 1e-5  # off by 7,680 B (3,840 params)


@pytest.mark.parametrize("part, header_gb", [("audio", 0.614), ("vision", 0.337)])
def test_gemma4_e2b_towers_match_the_checkpoint_header(part: str, header_gb: float) -> None:
    spec = from_hf_config(json.loads((STARTUP_CONFIGS / "gemma-4-e2b.json").read_text()), "gemma-4-e2b")
    assert round(2 * spec.param_breakdown.num_params((part,)) / 1e9, 3) == header_gb


def test_gemma4_kv_shared_layers_allocate_kv_slots_the_checkpoint_lacks() -> None:
    # E2B: the last 20 of 35 layers read another layer's KV; vLLM's QKVParallelLinear still holds
    # K and V there: 16 sliding (1 x 256) + 4 full (1 x 512) layers, 2 x 1536 inputs each.
    spec = from_hf_config(json.loads((STARTUP_CONFIGS / "gemma-4-e2b.json").read_text()), "gemma-4-e2b")
    slots = [w for w in spec.param_breakdown.linears if w.allocated_only]
    assert sum(w.in_features * w.out_features for w in slots) == 2 * 1536 * (16 * 256 + 4 * 512)
    assert spec.param_breakdown.num_params(("language_model",)) == spec.num_params


torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY_TEXT = dict(
    hidden_size=40,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=8,
    vocab_size=64,
    intermediate_size=16,
    max_position_embeddings=128,
)


def _numel(*modules) -> int:
    return sum(p.numel() for m in modules for p in m.parameters())


def _vision_params(config: dict) -> int:
    spec = from_hf_config(config, "tiny")
    assert spec.param_breakdown is not None
    return spec.param_breakdown.num_params(("vision",))


def test_qwen3_5_vision_tower_matches_transformers() -> None:
    from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5VisionConfig
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5VisionModel

    vision = dict(
        depth=2,
        hidden_size=32,
        intermediate_size=48,
        num_heads=4,
        patch_size=4,
        temporal_patch_size=2,
        in_channels=3,
        out_hidden_size=40,
        spatial_merge_size=2,
        num_position_embeddings=16,
    )
    expected = _numel(Qwen3_5VisionModel(Qwen3_5VisionConfig(**vision)))
    text = dict(
        TINY_TEXT,
        model_type="qwen3_5_text",
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        linear_conv_kernel_dim=4,
        full_attention_interval=1,
    )
    config = {
        "model_type": "qwen3_5",
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "text_config": text,
        "vision_config": dict(vision, model_type="qwen3_5"),
    }
    assert _vision_params(config) == expected


def test_qwen2_5_vl_vision_tower_matches_transformers() -> None:
    from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionTransformerPretrainedModel

    vision = dict(
        depth=2,
        hidden_size=32,
        intermediate_size=48,
        num_heads=4,
        patch_size=4,
        temporal_patch_size=2,
        in_channels=3,
        out_hidden_size=40,
        spatial_merge_size=2,
    )
    expected = _numel(Qwen2_5_VisionTransformerPretrainedModel(Qwen2_5_VLVisionConfig(**vision)))
    config = dict(
        TINY_TEXT,
        model_type="qwen2",
        architectures=["Qwen2_5_VLForConditionalGeneration"],
        vision_config=dict(vision, model_type="qwen2_5_vl"),
    )
    assert _vision_params(config) == expected


def test_gemma3_siglip_tower_and_projector_match_transformers() -> None:
    from transformers import Gemma3Config
    from transformers.models.gemma3.modeling_gemma3 import Gemma3MultiModalProjector
    from transformers.models.siglip.modeling_siglip import SiglipVisionModel

    vision = dict(
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        image_size=32,
        patch_size=4,
        vision_use_head=False,
        model_type="siglip_vision_model",
    )
    text = dict(TINY_TEXT, model_type="gemma3_text", sliding_window=16)
    hf = Gemma3Config(vision_config=vision, text_config=text, mm_tokens_per_image=4)
    expected = _numel(SiglipVisionModel(hf.vision_config), Gemma3MultiModalProjector(hf))
    config = {
        "model_type": "gemma3",
        "architectures": ["Gemma3ForConditionalGeneration"],
        "text_config": text,
        "vision_config": vision,
        "mm_tokens_per_image": 4,
    }
    assert _vision_params(config) == expected


def test_pixtral_tower_and_mistral3_projector_match_transformers() -> None:
    from transformers import Mistral3Config
    from transformers.models.mistral3.modeling_mistral3 import Mistral3MultiModalProjector
    from transformers.models.pixtral.modeling_pixtral import PixtralVisionModel

    vision = dict(
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        image_size=32,
        patch_size=4,
        head_dim=8,
        model_type="pixtral",
    )
    text = dict(TINY_TEXT, model_type="mistral")
    hf = Mistral3Config(
        vision_config=vision, text_config=text, spatial_merge_size=2, multimodal_projector_bias=False
    )
    expected = _numel(PixtralVisionModel(hf.vision_config), Mistral3MultiModalProjector(hf))
    config = {
        "model_type": "mistral3",
        "architectures": ["Mistral3ForConditionalGeneration"],
        "text_config": text,
        "vision_config": vision,
        "spatial_merge_size": 2,
        "multimodal_projector_bias": False,
    }
    assert _vision_params(config) == expected


def test_gemma4_audio_tower_and_projector_match_transformers() -> None:
    from transformers.models.gemma4.configuration_gemma4 import Gemma4AudioConfig
    from transformers.models.gemma4.modeling_gemma4 import Gemma4AudioModel

    audio = dict(
        model_type="gemma4_audio",
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        conv_kernel_size=3,
        subsampling_conv_channels=[8, 4],
        output_proj_dims=24,
    )
    text = dict(
        TINY_TEXT, model_type="gemma4_text", hidden_size_per_layer_input=0, layer_types=["full_attention"]
    )
    config = {
        "model_type": "gemma4",
        "architectures": ["Gemma4ForConditionalGeneration"],
        "text_config": text,
        "audio_config": audio,
    }
    spec = from_hf_config(config, "tiny")
    tower = Gemma4AudioModel(Gemma4AudioConfig(**audio))
    projector = 24 * TINY_TEXT["hidden_size"]  # embed_audio.embedding_projection, no bias
    assert spec.param_breakdown.num_params(("audio",)) == _numel(tower) + projector
