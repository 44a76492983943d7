"""Classify every layer of a model into the caches it owns.

A family rule (layer_rules.py) turns a config into one layer-type *name* per layer, in the
vocabulary transformers uses for `config.layer_types` ("full_attention", "sliding_attention",
"chunked_attention", "linear_attention", "hybrid", "conv", "mlp", "moe", and the legacy "attention" /
"mamba"). This module maps the names to cache kinds. "linear_attention" / "mamba" / "conv" mean the
family's own recurrent mixer (Mamba1, Mamba2, gated delta-net, lightning, KDA, short conv); "hybrid"
is attention + a Mamba2 mixer in one layer (Falcon-H1 side by side, Zamba2 a shared attention block
before the mixer); "mlp" / "moe" layers own no cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.indexer_cache import DSA_FAMILIES, MINIMAX_M3_FAMILIES


class LayerKind(str, Enum):
    FULL = "full"
    SLIDING = "sliding"
    CHUNKED = "chunked"
    RECURRENT = "recurrent"  # the family's recurrent mixer, see RECURRENT_VARIANT
    INDEXER = "indexer"  # DeepSeek Sparse Attention's lightning-indexer keys (indexer_cache.py)


_NAME_TO_KINDS: dict[str, tuple[LayerKind, ...]] = {
    "full_attention": (LayerKind.FULL,),
    "attention": (LayerKind.FULL,),
    "sliding_attention": (LayerKind.SLIDING,),
    "chunked_attention": (LayerKind.CHUNKED,),
    "linear_attention": (LayerKind.RECURRENT,),
    "mamba": (LayerKind.RECURRENT,),
    "conv": (LayerKind.RECURRENT,),  # LFM2's short convolution: a conv-only recurrent state
    "hybrid": (LayerKind.FULL, LayerKind.RECURRENT),  # attention first: vLLM registers it first
    # DSA: MLA plus the indexer's key cache (the MLA layer registers first in vLLM).
    "indexed_attention": (LayerKind.FULL, LayerKind.INDEXER),
    # The same layer as GLM-5.2's released config.json names it (transformers 5.11's spelling).
    "deepseek_sparse_attention": (LayerKind.FULL, LayerKind.INDEXER),
    # MiniMax-M3's sparse layer: GQA K/V plus an index-key cache; vLLM registers the index cache first.
    "minimax_m3_sparse": (LayerKind.INDEXER, LayerKind.FULL),
    # DeepSeek-V4 (compressed_attention.py): a sliding window beside compressed full-lifetime states.
    "compressed_attention": (LayerKind.SLIDING, LayerKind.FULL),
    "mlp": (),
    "moe": (),
}

# The recurrent mixer behind "linear_attention" / "mamba" in each family.
RECURRENT_VARIANT: dict[str, str] = {
    "bamba": "mamba2",
    "granitemoehybrid": "mamba2",
    "nemotron_h": "mamba2",
    "falcon_h1": "mamba2",
    "jamba": "mamba1",
    "qwen3_next": "gdn",
    "qwen3_5_text": "gdn",  # Qwen3.5 / Qwen3.6 dense
    "qwen3_5_moe_text": "gdn",  # Qwen3.5 / Qwen3.6 MoE
    "qwen4_exp_text": "gdn",  # Qwen4-Exp (vLLM: QwenGatedDeltaNetAttention, Qwen3-Next's state shapes)
    "olmo_hybrid": "gdn",  # OLMo hybrid (vLLM: gated_delta_net_state_shape from the linear_* keys)
    "lara_mini": "gdn",  # LaraMini (transformers' Qwen3-Next-style delta net; vLLM 0.32 does not serve it)
    "minimax": "lightning",
    "kimi_linear": "kda",
    "alice_ai": "kda",  # AliceAI (vLLM 0.33 alice_ai.py: KimiGatedDeltaNetAttention, kda_state_shape)
    "mamba2": "mamba2",  # pure state-space models
    "mamba": "mamba1",
    "falcon_mamba": "mamba1",
    "zamba2": "mamba2",  # Mamba2 layers; "hybrid" layers add a shared attention block's own KV
    "bailing_hybrid": "kda",  # Ling / Ring 2.5+ (vLLM BailingMoeV3): Kimi delta attention + MLA
    "lfm2": "short_conv",
    "lfm2_moe": "short_conv",
    "lfm3": "short_conv",
}
SSM_ONLY_FAMILIES = frozenset({"mamba2", "mamba", "falcon_mamba"})  # no attention layer at all


@dataclass(frozen=True)
class LayerTypeList:
    """One layer-type name per layer and the config attribute they were read from (for errors)."""

    attribute: str
    names: tuple[str, ...]


# Layer kinds and recurrent families that exist in released configs but that hkv does not model
# yet: the refusal says what they are, so a user knows the plan is missing, not the config wrong.
UNMODELED_LAYER_KINDS: dict[str, str] = {
    # Planned from model_type deepseek_v4 (compressed_attention.py reads its ratios); elsewhere refused.
    "compressed_sparse_attention": "DeepSeek-V4's compressed sparse attention, planned for model_type deepseek_v4 "
                                   "only (its window, 4:1 latents, compressor states and indexer keys)",
    "heavily_compressed_attention": "DeepSeek-V4's heavily compressed attention, planned for model_type deepseek_v4 "
                                    "only (its window, 128:1 latents and compressor state)",
    "hybrid_sliding": "inkling2's sliding-window layer, of a model no vLLM release serves (0.32 and 0.33 "
                      "have no Inkling2 class; Inkling's own, model_type inkling_text, plans)",
}
# Families whose per-layer compression ratios hkv reads (model_specs/compressed_attention.py).
COMPRESSED_FAMILIES = frozenset({"deepseek_v4"})
# DSA layers beside sliding MLA layers, latents padded to one width (model_specs/padded_latent_layers.py).
PADDED_LATENT_FAMILIES = frozenset({"dots3_note", "dots3_note_text"})
UNMODELED_RECURRENT_FAMILIES: dict[str, str] = {
    "zamba": "Zamba's multi-head Mamba1 layers with shared attention blocks (vLLM does not serve Zamba v1)",
}


def kinds_from_names(view: ConfigView, types: LayerTypeList) -> tuple[tuple[LayerKind, ...], ...]:
    """Cache kinds per layer; unknown names and recurrent names in non-recurrent families raise."""
    per_layer = []
    for idx, name in enumerate(types.names):
        if name in UNMODELED_LAYER_KINDS:
            raise InvalidConfigError(
                f"{types.attribute}[{idx}] = {name!r} is {UNMODELED_LAYER_KINDS[name]}, which hkv does not "
                "model yet; it cannot plan this model")
        if name not in _NAME_TO_KINDS:
            raise InvalidConfigError(
                f"{types.attribute}[{idx}] = {name!r} is not a known layer kind; "
                f"expected one of: {', '.join(_NAME_TO_KINDS)}"
            )
        kinds = _NAME_TO_KINDS[name]
        indexed_families = (MINIMAX_M3_FAMILIES if name == "minimax_m3_sparse"
                            else DSA_FAMILIES | PADDED_LATENT_FAMILIES)
        if LayerKind.INDEXER in kinds and view.family not in indexed_families:
            raise InvalidConfigError(
                f"{types.attribute}[{idx}] = {name!r} ("
                f"{'MiniMax-M3 sparse attention' if name == 'minimax_m3_sparse' else 'DeepSeek Sparse Attention'}) "
                f"in model_type {view.family!r}, whose indexed layers hkv does not model yet; supported: "
                f"{', '.join(sorted(indexed_families))}")
        if name == "compressed_attention" and view.family not in COMPRESSED_FAMILIES:
            raise InvalidConfigError(
                f"{types.attribute}[{idx}] = {name!r} is DeepSeek-V4's compressed attention, which hkv reads "
                f"from model_type {', '.join(sorted(COMPRESSED_FAMILIES))} only, not {view.family!r}")
        if LayerKind.RECURRENT in kinds and view.family in UNMODELED_RECURRENT_FAMILIES:
            raise InvalidConfigError(
                f"model_type {view.family!r} has {UNMODELED_RECURRENT_FAMILIES[view.family]}; hkv does not "
                "model them yet, so it cannot plan this model")
        if LayerKind.RECURRENT in kinds and view.family not in RECURRENT_VARIANT:
            raise InvalidConfigError(
                f"{types.attribute}[{idx}] = {name!r} needs a recurrent mixer, but model_type "
                f"{view.family!r} has none known; supported: {', '.join(sorted(RECURRENT_VARIANT))}"
            )
        per_layer.append(kinds)
    return tuple(per_layer)
