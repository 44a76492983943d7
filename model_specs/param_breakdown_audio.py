"""Audio towers of multimodal checkpoints, from `audio_config`, as ParamBreakdown weights.

vLLM loads an audio tower with the language model unless audio is disabled (`--limit-mm-per-prompt`
audio 0 / `--language-model-only`). Each builder mirrors the module tree vLLM builds:
  gemma4_audio  Gemma 4 E2B / E4B (vllm/model_executor/models/gemma4_mm.py: transformers'
                Gemma4AudioModel through AutoModel.from_config, then the embed_audio projector).
                Subsampler: two 3x3 convolutions (1 -> c0 -> c1 channels, each with a norm) and
                input_proj_linear (c0 / 4 x c1 -> hidden, as transformers sizes it). Per conformer
                block of width h: two macaron feed-forwards (h -> 4h -> h, pre / post norms),
                self-attention (q, k, v, post, relative_k_proj: h x h each; per_dim_scale of one
                head's width), a light convolution (linear_start h -> 2h, depthwise conv of
                conv_kernel_size, conv_norm, linear_end h -> h, pre norm) and three block norms.
                Then output_proj (h -> output_proj_dims, with bias) and
                embed_audio.embedding_projection (output_proj_dims -> text hidden, no bias). Every
                linear is replicated over TP ranks (recursive_replace_linear: "replicate"). The
                clipped linears' scalar bounds are fp32 buffers (a few KiB), left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hkv.model_specs.param_breakdown import DenseWeight, LinearWeight, Part
from hkv.model_specs.param_breakdown_blocks import Weights

A: Part = "audio"


def _lin(name: str, n_in: int, n_out: int, bias: bool = False) -> LinearWeight:
    return LinearWeight(name, n_in, n_out, A, 0, "replicated", bias=bias)


def _gemma4_audio(ac: Mapping[str, Any], cfg: Mapping[str, Any], text_hidden: int) -> Weights:
    h, depth = int(ac["hidden_size"]), int(ac["num_hidden_layers"])
    heads, kernel = int(ac["num_attention_heads"]), int(ac.get("conv_kernel_size", 5))
    c0, c1 = (int(c) for c in ac.get("subsampling_conv_channels", (128, 32)))
    out_dims = int(ac.get("output_proj_dims") or h)
    p = "model.audio_tower."
    s = p + "subsample_conv_projection."
    out: Weights = [
        DenseWeight(s + "layer0.conv", c0 * 9, A),
        DenseWeight(s + "layer0.norm", c0, A),
        DenseWeight(s + "layer1.conv", c1 * c0 * 9, A),
        DenseWeight(s + "layer1.norm", c1, A),
        _lin(s + "input_proj_linear", c0 // 4 * c1, h),
    ]
    for b in range(depth):
        q = f"{p}layers.{b}."
        for ff in ("feed_forward1", "feed_forward2"):
            out += [
                _lin(f"{q}{ff}.ffw_layer_1.linear", h, 4 * h),
                _lin(f"{q}{ff}.ffw_layer_2.linear", 4 * h, h),
                DenseWeight(f"{q}{ff}.pre_layer_norm", h, A),
                DenseWeight(f"{q}{ff}.post_layer_norm", h, A),
            ]
        out += [_lin(f"{q}self_attn.{n}.linear", h, h) for n in ("q_proj", "k_proj", "v_proj")]
        out += [
            _lin(q + "self_attn.post.linear", h, h),
            _lin(q + "self_attn.relative_k_proj", h, h),
            DenseWeight(q + "self_attn.per_dim_scale", h // heads, A),
            _lin(q + "lconv1d.linear_start.linear", h, 2 * h),
            _lin(q + "lconv1d.linear_end.linear", h, h),
            DenseWeight(q + "lconv1d.depthwise_conv1d", h * kernel, A),
            DenseWeight(q + "lconv1d.conv_norm", h, A),
            DenseWeight(q + "lconv1d.pre_layer_norm", h, A),
            *(DenseWeight(q + n, h, A) for n in ("norm_pre_attn", "norm_post_attn", "norm_out")),
        ]
    return [
        *out,
        _lin(p + "output_proj", h, out_dims, bias=True),
        _lin("model.embed_audio.embedding_projection", out_dims, text_hidden),
    ]


AudioBuilder = Callable[[Mapping[str, Any], Mapping[str, Any], int], Weights]
# audio_config model_type -> builder
AUDIO_BUILDERS: dict[str, AudioBuilder] = {"gemma4_audio": _gemma4_audio}


def audio_weights(config: Mapping[str, Any], text_hidden: int) -> Weights:
    """The audio tower's weights; [] when the config has none hkv models."""
    ac = config.get("audio_config")
    if not isinstance(ac, Mapping):
        return []
    builder = AUDIO_BUILDERS.get(str(ac.get("model_type", "")))
    return [] if builder is None else builder(ac, config, text_hidden)
