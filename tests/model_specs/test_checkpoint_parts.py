"""Checkpoint bytes split by part from tensor names: language model, vision / audio towers, MTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hkv.model_specs import load_model_spec
from hkv.model_specs.checkpoint_parts import tensor_part


@pytest.mark.parametrize(("name", "part"), [
    ("model.layers.3.self_attn.q_proj.weight", "language_model"),
    ("model.language_model.layers.0.mlp.up_proj.weight", "language_model"),
    ("lm_head.weight", "language_model"),
    ("visual.blocks.0.attn.qkv.weight", "vision"),                      # Qwen2.5-VL
    ("model.visual.merger.mlp.0.weight", "vision"),                     # Qwen3-VL
    ("vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", "vision"),  # Gemma 3, Llava
    ("multi_modal_projector.mm_input_projection_weight", "vision"),
    ("model.vision_model.embeddings.patch_embedding.weight", "vision"),  # Idefics3, Llama 4
    ("mm_projector.0.weight", "vision"),
    ("thinker.audio_tower.layers.0.fc1.weight", "audio"),               # Qwen2.5-Omni
    ("model.embed_audio.embedding_projection.weight", "audio"),         # Gemma 3n
    ("mtp.layers.0.self_attn.q_proj.weight", "mtp"),                    # Qwen3-Next
    ("model.mtp_layers.0.input_proj.weight", "mtp"),                    # MiMo
    ("model.layers.61.eh_proj.weight", "mtp"),                          # DeepSeek-V3: layer 61 of 61
    ("model.layers.60.mlp.gate.weight", "language_model"),
])
def test_tensor_part_by_name(name: str, part: str) -> None:
    assert tensor_part(name, num_hidden_layers=61) == part


def test_local_directory_splits_bytes_by_part(tmp_path: Path, tiny_llama: dict, safetensors_writer) -> None:
    (tmp_path / "config.json").write_text(json.dumps(tiny_llama))  # 2 layers
    safetensors_writer(tmp_path / "model.safetensors", {
        "model.layers.1.mlp.up_proj.weight": ("BF16", [64, 96]),      # 12,288 B
        "model.layers.2.eh_proj.weight": ("BF16", [8, 8]),            # layer 2 of 2: MTP, 128 B
        "vision_tower.patch_embed.weight": ("F32", [10]),             # 40 B
        "audio_tower.conv.weight": ("U8", [7]),                       # 7 B
    })
    spec = load_model_spec(str(tmp_path))
    assert spec.checkpoint_bytes is not None and spec.checkpoint_bytes.source == "local"
    parts = {"language_model": 12_288, "vision": 40, "audio": 7, "mtp": 128}
    assert spec.checkpoint_bytes.bytes_by_part == parts
    assert spec.weights_bytes_exact == spec.checkpoint_bytes.total_bytes == 12_288 + 40 + 7 + 128
