"""Vision towers of multimodal checkpoints, from `vision_config`, as ParamBreakdown weights.

vLLM loads a tower with the language model unless every modality is disabled
(`--limit-mm-per-prompt` all zero / `--language-model-only`), and shards its linears over TP
ranks like the decoder's (QKV / fc1 column-parallel, proj / fc2 row-parallel) in the default
`mm_encoder_tp_mode="weights"`. Each builder mirrors one transformers module tree (the tests
count transformers' own classes built from tiny configs):
  qwen3_vl   Qwen3-VL / Qwen3.5 / Qwen3.6 ViT: Conv3d patch embedding (bias), learned positions,
             LayerNorm blocks with fused qkv and fc1/fc2, patch merger (+ Qwen3-VL deepstack mergers);
  qwen2_5_vl Qwen2-VL / Qwen2.5-VL ViT: bias-free Conv3d, RMSNorm blocks with a gated MLP, merger;
  siglip     Gemma 3's SigLIP (no pooling head) + its projector (a plain matrix and an RMSNorm);
  pixtral    Mistral-Small-3.x's Pixtral + the Mistral3 projector (patch merger, two linears);
  gemma4     Gemma 4's gemma4_vision encoder + embed_vision projector (param_breakdown_gemma4.py).
Audio towers: param_breakdown_audio.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hkv.model_specs.param_breakdown import DenseWeight, LinearWeight, Part
from hkv.model_specs.param_breakdown_blocks import Weights

V: Part = "vision"


def _lin(name: str, n_in: int, n_out: int, parallel: str = "column", bias: bool = True) -> LinearWeight:
    return LinearWeight(name, n_in, n_out, V, 0, parallel, bias=bias)  # type: ignore[arg-type]


def _dense(name: str, numel: int) -> DenseWeight:
    return DenseWeight(name, numel, V)


def _layer_norm(name: str, size: int) -> Weights:
    return [_dense(name, 2 * size)]  # weight + bias


def _qwen3_vl(vc: Mapping[str, Any], cfg: Mapping[str, Any], text_hidden: int) -> Weights:
    p = "model.visual."
    h, i, depth = int(vc["hidden_size"]), int(vc["intermediate_size"]), int(vc["depth"])
    merged = h * int(vc.get("spatial_merge_size", 2)) ** 2
    out_h = int(vc.get("out_hidden_size", text_hidden))
    patch = int(vc.get("in_channels", 3)) * int(vc.get("temporal_patch_size", 2)) * int(vc["patch_size"]) ** 2
    out: Weights = [
        _dense(p + "patch_embed.proj", patch * h + h),
        _dense(p + "pos_embed", int(vc.get("num_position_embeddings", 2304)) * h),
    ]
    for b in range(depth):
        q = f"{p}blocks.{b}."
        out += [
            *_layer_norm(q + "norm1", h),
            *_layer_norm(q + "norm2", h),
            _lin(q + "attn.qkv", h, 3 * h),
            _lin(q + "attn.proj", h, h, "row"),
            _lin(q + "mlp.linear_fc1", h, i),
            _lin(q + "mlp.linear_fc2", i, h, "row"),
        ]
    out += [
        *_layer_norm(p + "merger.norm", h),
        _lin(p + "merger.linear_fc1", merged, merged),
        _lin(p + "merger.linear_fc2", merged, out_h, "row"),
    ]
    for d in range(len(vc.get("deepstack_visual_indexes") or ())):
        q = f"{p}deepstack_merger_list.{d}."
        out += [
            *_layer_norm(q + "norm", merged),
            _lin(q + "linear_fc1", merged, merged),
            _lin(q + "linear_fc2", merged, out_h, "row"),
        ]
    return out


def _qwen2_5_vl(vc: Mapping[str, Any], cfg: Mapping[str, Any], text_hidden: int) -> Weights:
    p = "visual."
    h, i, depth = int(vc["hidden_size"]), int(vc["intermediate_size"]), int(vc["depth"])
    merged = h * int(vc.get("spatial_merge_size", 2)) ** 2
    patch = int(vc.get("in_channels", 3)) * int(vc.get("temporal_patch_size", 2)) * int(vc["patch_size"]) ** 2
    out: Weights = [_dense(p + "patch_embed.proj", patch * h)]
    for b in range(depth):
        q = f"{p}blocks.{b}."
        out += [
            _dense(q + "norm1", h),
            _dense(q + "norm2", h),
            _lin(q + "attn.qkv", h, 3 * h),
            _lin(q + "attn.proj", h, h, "row"),
            _lin(q + "mlp.gate_proj", h, i),
            _lin(q + "mlp.up_proj", h, i),
            _lin(q + "mlp.down_proj", i, h, "row"),
        ]
    out += [
        _dense(p + "merger.ln_q", h),
        _lin(p + "merger.mlp.0", merged, merged),
        _lin(p + "merger.mlp.2", merged, int(vc.get("out_hidden_size", text_hidden)), "row"),
    ]
    return out


def _siglip(vc: Mapping[str, Any], cfg: Mapping[str, Any], text_hidden: int) -> Weights:
    p = "vision_tower.vision_model."
    h, i = int(vc["hidden_size"]), int(vc["intermediate_size"])
    patch, positions = int(vc["patch_size"]), (int(vc["image_size"]) // int(vc["patch_size"])) ** 2
    out: Weights = [
        _dense(p + "embeddings.patch_embedding", int(vc.get("num_channels", 3)) * patch * patch * h + h),
        _dense(p + "embeddings.position_embedding", positions * h),
    ]
    for b in range(int(vc["num_hidden_layers"])):
        q = f"{p}encoder.layers.{b}."
        out += [
            *_layer_norm(q + "layer_norm1", h),
            *_layer_norm(q + "layer_norm2", h),
            *(_lin(f"{q}self_attn.{n}_proj", h, h) for n in "qkv"),
            _lin(q + "self_attn.out_proj", h, h, "row"),
            _lin(q + "mlp.fc1", h, i),
            _lin(q + "mlp.fc2", i, h, "row"),
        ]
    # Gemma 3's projector is a bare matrix (vision hidden x text hidden), never quantized.
    out += [
        *_layer_norm(p + "post_layernorm", h),
        _dense("multi_modal_projector.mm_input_projection_weight", h * text_hidden),
        _dense("multi_modal_projector.mm_soft_emb_norm", h),
    ]
    return out


def _pixtral(vc: Mapping[str, Any], cfg: Mapping[str, Any], text_hidden: int) -> Weights:
    p = "vision_tower."
    h, i, patch = int(vc["hidden_size"]), int(vc["intermediate_size"]), int(vc["patch_size"])
    merged = h * int(cfg.get("spatial_merge_size", 2)) ** 2
    bias = bool(cfg.get("multimodal_projector_bias", False))
    out: Weights = [
        _dense(p + "patch_conv", int(vc.get("num_channels", 3)) * patch * patch * h),
        _dense(p + "ln_pre", h),
    ]
    for b in range(int(vc["num_hidden_layers"])):
        q = f"{p}transformer.layers.{b}."
        out += [
            _dense(q + "attention_norm", h),
            _dense(q + "ffn_norm", h),
            *(_lin(f"{q}attention.{n}_proj", h, h, bias=False) for n in "qkv"),
            _lin(q + "attention.o_proj", h, h, "row", bias=False),
            _lin(q + "feed_forward.gate_proj", h, i, bias=False),
            _lin(q + "feed_forward.up_proj", h, i, bias=False),
            _lin(q + "feed_forward.down_proj", i, h, "row", bias=False),
        ]
    m = "multi_modal_projector."
    out += [
        _dense(m + "norm", h),
        _lin(m + "patch_merger.merging_layer", merged, h, "replicated", bias=False),
        _lin(m + "linear_1", h, text_hidden, bias=bias),
        _lin(m + "linear_2", text_hidden, text_hidden, "row", bias=bias),
    ]
    return out


def _gemma4_vision(vc: Mapping[str, Any], cfg: Mapping[str, Any], text_hidden: int) -> Weights:
    from hkv.model_specs.param_breakdown_gemma4 import gemma4_vision  # Gemma 4 only (issue 34: cold start)
    return gemma4_vision(vc, cfg, text_hidden)


TowerBuilder = Callable[[Mapping[str, Any], Mapping[str, Any], int], Weights]
# vision_config model_type (or the wrapper's) -> builder
TOWER_BUILDERS: dict[str, TowerBuilder] = {
    "qwen3_vl": _qwen3_vl,
    "qwen3_vl_moe": _qwen3_vl,
    "qwen3_5": _qwen3_vl,
    "qwen3_5_moe": _qwen3_vl,
    "qwen3_5_vision": _qwen3_vl,
    "qwen3_5_moe_vision": _qwen3_vl,
    "qwen2_5_vl": _qwen2_5_vl,
    "qwen2_vl": _qwen2_5_vl,
    "siglip_vision_model": _siglip,
    "gemma3": _siglip,
    "pixtral": _pixtral,
    "mistral3": _pixtral,
    "gemma4_vision": _gemma4_vision,
    "gemma4": _gemma4_vision,
}


def tower_builder(config: Mapping[str, Any]) -> TowerBuilder | None:
    vc = config.get("vision_config")
    if not isinstance(vc, Mapping):
        return None
    for key in (str(vc.get("model_type", "")), str(config.get("model_type", ""))):
        if key in TOWER_BUILDERS:
            return TOWER_BUILDERS[key]
    return None


def tower_weights(config: Mapping[str, Any], text_hidden: int) -> Weights:
    """The vision tower's weights; [] when the config has none hkv models."""
    builder = tower_builder(config)
    return [] if builder is None else builder(config["vision_config"], config, text_hidden)
