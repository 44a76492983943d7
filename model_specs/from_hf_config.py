"""Build a ModelSpec from an HF config.json dict: classify layers, size their caches, count weights.

Keys starting with `_` are catalog annotations (`_model_id`, `_verified`, `_assumed_<key>`), never
part of the model. Everything this module had to assume is listed in `ModelSpec.note`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast

from hkv.model_specs.architecture_check import check_architecture
from hkv.model_specs.attention_dims import attention_desc, attention_dims
from hkv.model_specs.config_view import ConfigView, merge_text_config
from hkv.model_specs.draft_layers import full_attention_drafts
from hkv.model_specs.dtypes import DEFAULT_DTYPE_BYTES, dtype_bytes
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.family_defaults import FAMILY_NOTES, QUIET_DEFAULT_KEYS, defaults_for, family_of
from hkv.model_specs.family_sets import DOMYN_EDGE_FAMILIES, STEP5_FAMILIES
from hkv.model_specs.indexer_cache import indexer_desc
from hkv.model_specs.kv_sharing import kv_share_targets
from hkv.model_specs.layer_classify import classify_layers
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer, RecurrentDesc
from hkv.model_specs.layer_kinds import SSM_ONLY_FAMILIES, LayerKind
from hkv.model_specs.lazy_import import resolve
from hkv.model_specs.mimo_v2_layers import MIMO_V2_FAMILIES
from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.nemotron_nas_layers import NEMOTRON_NAS_FAMILY
from hkv.model_specs.param_count import count_params
from hkv.model_specs.param_breakdown import ParamBreakdown
from hkv.model_specs.param_breakdown_build import build_breakdown
from hkv.model_specs.per_layer_attention import apply_override, per_layer_overrides
from hkv.model_specs.quantized_weights import quantized_weights_bytes
from hkv.model_specs.state_dtypes import default_state_dtype_bytes
from hkv.model_specs.vision_tower import vision_tower_of


def from_hf_config(config: Mapping[str, Any], name: str, *, dtype_override: str | None = None,
                   model_id: str | None = None, source: str = "",
                   weights_bytes_exact: int | None = None) -> ModelSpec:
    """The ModelSpec of `config` (a parsed config.json); `name` labels it in reports.

    Raises UnsupportedArchitectureError for models hkv does not handle (architecture_check.py) and
    InvalidConfigError (one line, naming the attribute) for configs it cannot interpret.
    """
    if not isinstance(config, Mapping):
        raise InvalidConfigError(f"{name}: config must be a JSON object, got {type(config).__name__}")
    merged = merge_text_config(config)
    if not merged.get("model_type"):
        raise InvalidConfigError(f"{name}: config has no model_type; cannot tell which family rules apply")
    family = family_of(merged)
    check_architecture(config, merged, family, name)
    view = ConfigView(merged, family, defaults_for(family), [], QUIET_DEFAULT_KEYS)
    if str(merged["model_type"]) in FAMILY_NOTES:
        view.note(FAMILY_NOTES[str(merged["model_type"])])

    kinds = classify_layers(view)
    model_dtype = _model_dtype_bytes(view, dtype_override)
    layers = _cache_layers(view, kinds, model_dtype)
    draft_layers = _mtp_draft_layers(view, layers, len(kinds))
    num_params = count_params(view, kinds)
    _note_scope(config, view)
    architectures = tuple(str(a) for a in config.get("architectures") or merged.get("architectures") or ())
    breakdown = _param_breakdown(view, kinds, config, num_params, architectures)

    moe_shape = _moe_shape(view)
    return ModelSpec(
        name=name,
        model_id=model_id or str(config.get("_model_id") or config.get("_name_or_path") or ""),
        model_type=str(config.get("model_type") or merged["model_type"]),
        num_hidden_layers=len(kinds),
        cache_layers=layers,
        draft_layers=draft_layers,
        family=family,
        max_model_len=_max_model_len(view),
        hidden_size=view.int_value("hidden_size"),
        vocab_size=view.int_value("vocab_size"),
        intermediate_size=_intermediate_size(view),
        dtype_bytes=model_dtype,
        num_params=num_params,
        weights_bytes_exact=weights_bytes_exact,
        param_breakdown=breakdown,
        quantization_config=_quantization_config(merged),
        quantized_weights_bytes=quantized_weights_bytes(merged, num_params, model_dtype),
        verified=config.get("_verified") is not False,
        note="; ".join(view.notes),
        architectures=architectures,
        has_sinks=view.family == "gpt_oss",
        attn_logit_softcap=view.get("attn_logit_softcapping"),
        source=source,
        vision_tower=vision_tower_of(config),
        num_experts_per_tok=moe_shape[0], moe_intermediate_size=moe_shape[1],
        hf_config=config,
    )


def _quantization_config(merged: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The config's quantization_config, with DeepSeek-V4's top-level `expert_dtype` (the routed
    experts' format, fp4 or fp8) folded in where the quantization_config does not carry it itself."""
    quant = merged.get("quantization_config")
    if not isinstance(quant, Mapping):
        return None
    if "expert_dtype" in merged and "expert_dtype" not in quant:
        return {**quant, "expert_dtype": merged["expert_dtype"]}
    return quant


def _moe_shape(view: ConfigView) -> tuple[int, int]:
    """(experts per token, one expert's intermediate size); zeros for a dense model."""
    experts = next((int(view.get(k) or 0) for k in ("num_experts", "num_local_experts", "n_routed_experts")
                    if view.get(k)), 0)
    per_token = int(view.get("num_experts_per_tok") or 0)
    if not experts or not per_token:
        return 0, 0
    size = int(view.get("moe_intermediate_size") or view.get("intermediate_size") or 0)
    return per_token, size


def _param_breakdown(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...], config: Mapping[str, Any],
                     num_params: int, architectures: tuple[str, ...]) -> ParamBreakdown | None:
    """Every weight by shape and part (param_breakdown_build.py); None, with a note, when a tower's
    config lacks a dimension the builder needs."""
    try:
        return build_breakdown(view, kinds, config, num_params, architectures)
    except (KeyError, TypeError, ValueError) as err:
        view.note(f"no weight breakdown (vision_config lacks {err}): weights counted from num_params")
        return None


# Config keys naming the multi-token-prediction (MTP) layers a checkpoint ships for speculative
# decoding: Qwen3-Next / Qwen3.5 / Qwen3.6, and DeepSeek-V3 / GLM-4.5.
MTP_LAYER_KEYS = ("mtp_num_hidden_layers", "num_nextn_predict_layers")


def _mtp_draft_layers(view: ConfigView, layers: tuple[CacheLayer, ...], num_layers: int) -> tuple[CacheLayer, ...]:
    """The MTP layers' caches, used only under speculative decoding (vLLM's drafter then
    registers them with the target's layers); () when the config has none or the model has no
    full-attention layer to copy."""
    num_mtp = next((view.int_value(k) for k in MTP_LAYER_KEYS if view.get(k)), 0)
    if view.family in FAMILY_DRAFT_LAYERS and num_mtp:
        draft_layers = cast(DraftLayersBuilder, resolve(FAMILY_DRAFT_LAYERS[view.family]))
        return draft_layers(view, num_layers, num_mtp)
    try:
        return full_attention_drafts(layers, num_layers, num_mtp)
    except InvalidConfigError:
        return ()


CacheLayersBuilder = Callable[[ConfigView, tuple[tuple[LayerKind, ...], ...], int], tuple[CacheLayer, ...]]
DraftLayersBuilder = Callable[[ConfigView, int, int], tuple[CacheLayer, ...]]
_M = "hkv.model_specs."
# Families whose layers cache more than their attention and mixer (Inkling: a conv state per layer):
# "module:function" of a CacheLayersBuilder, its module imported when planned (lazy_import.py).
FAMILY_CACHE_LAYERS: dict[str, str] = {
    "inkling_text": _M + "inkling_layers:inkling_cache_layers",
    "deepseek_v4": _M + "compressed_attention:compressed_cache_layers",
    "dots3_note": _M + "padded_latent_layers:padded_latent_layers",
    "dots3_note_text": _M + "padded_latent_layers:padded_latent_layers",
    "dory": _M + "dory_layers:dory_cache_layers",
    NEMOTRON_NAS_FAMILY: _M + "nemotron_nas_layers:nemotron_nas_cache_layers",
    **{family: _M + "mimo_v2_layers:mimo_v2_cache_layers" for family in MIMO_V2_FAMILIES},
    **{family: _M + "domyn_edge_layers:domyn_edge_cache_layers" for family in DOMYN_EDGE_FAMILIES},
    **{family: _M + "step5_layers:step5_cache_layers" for family in STEP5_FAMILIES}}
# Families whose MTP layers are not copies of their first full-attention layer (a DraftLayersBuilder's
# "module:function").
FAMILY_DRAFT_LAYERS: dict[str, str] = {
    "deepseek_v4": _M + "compressed_attention:compressed_draft_layers",
    "dots3_note": _M + "padded_latent_layers:padded_latent_draft_layers",
    "dots3_note_text": _M + "padded_latent_layers:padded_latent_draft_layers",
    **{family: _M + "step5_layers:step5_draft_layers" for family in STEP5_FAMILIES}}


def _cache_layers(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...],
                  model_dtype: int) -> tuple[CacheLayer, ...]:
    """One AttentionDesc / RecurrentDesc per cache-owning module, attention first within a layer
    (families with caches of their own: FAMILY_CACHE_LAYERS)."""
    if view.family in FAMILY_CACHE_LAYERS:
        cache_layers = cast(CacheLayersBuilder, resolve(FAMILY_CACHE_LAYERS[view.family]))
        return cache_layers(view, kinds, model_dtype)
    uses = {kind for layer in kinds for kind in layer}
    dims = attention_dims(view) if uses - {LayerKind.RECURRENT} else None
    geometry = None
    if LayerKind.RECURRENT in uses:
        from hkv.model_specs.recurrent_dims import recurrent_geometry  # hybrid families only (issue 34)
        geometry = recurrent_geometry(view)
    shared = kv_share_targets(view, kinds)
    overrides = per_layer_overrides(view, kinds) if dims is not None else {}
    layers: list[CacheLayer] = []
    for idx, layer_kinds in enumerate(kinds):
        for kind in layer_kinds:
            if kind is LayerKind.RECURRENT:
                assert geometry is not None
                conv_bytes, ssm_bytes = default_state_dtype_bytes(view, geometry.variant, model_dtype)
                layers.append(RecurrentDesc(
                    layer_idx=idx, variant=geometry.variant, conv_kernel_len=geometry.conv_kernel_len,
                    conv_dim=geometry.conv_dim, ssm_heads=geometry.ssm_heads, ssm_dims=geometry.ssm_dims,
                    default_conv_dtype_bytes=conv_bytes, default_ssm_dtype_bytes=ssm_bytes,
                    conv_groups=geometry.conv_groups, conv_group_dim=geometry.conv_group_dim))
            elif kind is LayerKind.INDEXER:
                layers.append(indexer_desc(view, idx))
            else:
                assert dims is not None
                desc = attention_desc(view, apply_override(dims, overrides.get(idx)), idx, kind)
                layers.append(replace(desc, kv_shared_with=shared[idx]) if idx in shared else desc)
    return tuple(layers)


def _model_dtype_bytes(view: ConfigView, dtype_override: str | None) -> int:
    if dtype_override is not None:
        return dtype_bytes(dtype_override, attribute="dtype_override")
    for key in ("torch_dtype", "dtype"):
        if view.has(key):
            return dtype_bytes(view.get(key), attribute=key)
    view.note(f"torch_dtype absent: assumed {DEFAULT_DTYPE_BYTES}-byte (bfloat16) weights")
    return DEFAULT_DTYPE_BYTES


# vLLM's max_model_len when a config names no length at all (ModelConfig's default_max_len);
# pure state-space models have no positions to bound it.
VLLM_DEFAULT_MAX_LEN = 2048


def _max_model_len(view: ConfigView) -> int:
    if view.has("model_max_length") and not view.has("max_position_embeddings"):
        return view.int_value("model_max_length")  # Kimi-Linear's name for it
    if view.family in SSM_ONLY_FAMILIES and not view.has("max_position_embeddings"):
        view.note(f"no max_position_embeddings (a state-space model has no positions): vLLM assumes "
                  f"{VLLM_DEFAULT_MAX_LEN:,} tokens unless --max-model-len says otherwise")
        return VLLM_DEFAULT_MAX_LEN
    return view.int_value("max_position_embeddings")


def _intermediate_size(view: ConfigView) -> int:
    raw = view.value("intermediate_size", 0)
    return max(int(x) for x in raw) if isinstance(raw, list) else int(raw)  # Gemma 3n: one per layer


def _note_scope(config: Mapping[str, Any], view: ConfigView) -> None:
    """Say what num_params leaves out, so weight bytes are not over-trusted."""
    if any(key in config for key in ("vision_config", "audio_config")) or any(
            "ConditionalGeneration" in str(a) for a in config.get("architectures") or ()):
        view.note("num_params counts the language model only (vision/audio towers excluded)")
    quant = view.get("quantization_config")
    if isinstance(quant, Mapping) and quant.get("quant_method"):
        method = quant["quant_method"]
        view.note(f"checkpoint is {method}-quantized: plans size its weights in that format from the "
                  "config (planner/budget/quantization/) unless safetensors headers are at hand")
