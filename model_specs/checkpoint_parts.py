"""Which part of a checkpoint a tensor belongs to, from its name alone.

vLLM loads a multimodal checkpoint's towers with the language model but skips the multi-token
prediction (MTP) layers unless speculative decoding drafts with them, so weight bytes are split:
- vision: an image tower or its projector ("visual.", "vision_tower.", "vision_model.",
  "multi_modal_projector.", "mm_projector.", "vpm.", "embed_vision.", ...);
- audio: an audio tower, its projector or a speech head ("audio_tower.", "embed_audio.", "talker.");
- mtp: MTP / draft layers ("mtp.", "model.mtp.", "model.mtp_layers.", Ernie's "mtp_*"), and, as in
  DeepSeek-V3 / GLM-4.5 checkpoints, decoder layers indexed at or past `num_hidden_layers`;
- language_model: everything else.
Only the module path before the first numeric segment is matched ("visual.blocks.0.attn.qkv.weight"
-> "visual", "blocks"), so a weight deep inside a decoder layer never decides its part.
"""

from __future__ import annotations

LANGUAGE_MODEL = "language_model"
VISION = "vision"
AUDIO = "audio"
MTP = "mtp"
PARTS = (LANGUAGE_MODEL, VISION, AUDIO, MTP)

# Module names, per part: (exact names, name prefixes). Names seen in vLLM's model loaders and HF
# checkpoints (Qwen-VL / Omni, Llava, Gemma 3 / 3n, InternVL, Idefics3, MiniCPM-V, Pixtral, Llama 4).
_TOWER_NAMES: tuple[tuple[str, frozenset[str], tuple[str, ...]], ...] = (
    (VISION, frozenset({"multi_modal_projector", "mm_projector", "vpm", "resampler", "connector", "mlp1",
                        "embed_vision", "spatial_projectors", "image_embed"}),
     ("vision", "visual", "vit_", "image_")),
    (AUDIO, frozenset({"embed_audio", "audio_embed", "talker", "code2wav", "token2wav"}), ("audio",)),
    (MTP, frozenset(), ("mtp",)),
)


def tensor_part(name: str, num_hidden_layers: int) -> str:
    """The part (one of PARTS) tensor `name` belongs to in a model of `num_hidden_layers` layers."""
    segments = name.split(".")
    module_path = _module_path(segments)
    for part, exact, prefixes in _TOWER_NAMES:
        if any(s in exact or s.startswith(prefixes) for s in module_path):
            return part
    layer_idx = _decoder_layer_index(segments)
    if layer_idx is not None and layer_idx >= num_hidden_layers:
        return MTP  # DeepSeek-style: the MTP block is stored as layer num_hidden_layers (+ k)
    return LANGUAGE_MODEL


def _module_path(segments: list[str]) -> list[str]:
    for i, segment in enumerate(segments):
        if segment.isdigit():
            return segments[:i]
    return segments


def _decoder_layer_index(segments: list[str]) -> int | None:
    for i in range(len(segments) - 1):
        if segments[i] == "layers" and segments[i + 1].isdigit():
            return int(segments[i + 1])
    return None
