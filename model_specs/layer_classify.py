"""Entry point of layer classification: pick the family rule, run it, map names to cache kinds."""

from __future__ import annotations

from typing import cast

from hkv.model_specs import layer_rules as rules
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.family_sets import DOMYN_EDGE_FAMILIES, STEP3P7_FAMILIES, STEP5_FAMILIES
from hkv.model_specs.layer_kinds import LayerKind, LayerTypeList, kinds_from_names
from hkv.model_specs.lazy_import import resolve

# A rule, or the "module:function" of one whose family module loads only when planned (lazy_import.py).
LAYER_RULES: dict[str, rules.LayerRule | str] = {
    "llama": rules.all_full,
    "deepseek_v3": rules.all_full,
    "deepseek_v2": rules.all_full,
    "glm4_moe": rules.all_full,
    "glm4_moe_lite": rules.all_full,  # MLA in every layer (GLM-4.7-Flash)
    "deepseek_v32": rules.dsa_layers,  # MLA + the DSA indexer's key cache
    "glm_moe_dsa": rules.dsa_layers,
    "hy_v4": rules.dsa_layers,
    "axk1": rules.all_full,  # MLA in every layer (A.X K1)
    "sarvam_mla": rules.all_full,  # MLA in every layer (Sarvam 105B), see latent_attention_form
    "minicpm3": rules.all_full,  # a latent config that vLLM pages as per-head K/V, see latent_attention_form
    "mistral": rules.window_covers_context,
    "qwen3": rules.qwen_window_layers,
    "qwen3_moe": rules.qwen_window_layers,
    "qwen2": rules.qwen_window_layers,
    "qwen2_moe": rules.qwen_window_layers,
    "gemma2": rules.alternating_sliding,
    "gpt_oss": rules.alternating_sliding,
    "gemma3_text": rules.sliding_window_pattern,
    "cohere2": rules.sliding_window_pattern,
    "gemma3n_text": rules.gemma3n_pattern,
    "gemma4_text": rules.gemma4_pattern,
    "llama4_text": rules.llama4_nope_layers,
    "qwen3_next": rules.full_attention_interval,
    "qwen3_5_text": rules.full_attention_interval,
    "qwen3_5_moe_text": rules.full_attention_interval,
    "qwen4_exp_text": rules.qwen4_exp_layers,
    "olmo_hybrid": rules.olmo_hybrid_layers,
    "lara_mini": rules.lara_mini_layers,
    "minimax": rules.minimax_attn_type_list,
    "minimax_m2": rules.minimax_m2_layers,  # full attention on every layer; attn_type_list all 1
    "nemotron-nas": rules.nemotron_nas_layers,  # attention or none per block_configs (nemotron_nas_layers.py)
    "mimo_v2_flash": rules.mimo_v2_layers,  # sliding / full per hybrid_layer_pattern (mimo_v2_layers.py)
    "bamba": rules.attention_indices,
    "granitemoehybrid": rules.granite_hybrid,
    "jamba": rules.period_offset,
    "falcon_h1": rules.every_layer_hybrid,
    "kimi_linear": rules.kimi_linear_layers,
    "mamba2": rules.all_mamba,
    "mamba": rules.all_mamba,
    "falcon_mamba": rules.all_mamba,
    "zamba2": rules.listed_layer_types,
    "bailing_hybrid": rules.listed_layer_types,
    "lfm2": rules.lfm2_layers,
    "lfm2_moe": rules.listed_layer_types,
    "lfm3": rules.listed_layer_types,
    "dots3_note": rules.listed_layer_types,  # indexed + sliding MLA: padded_latent_layers.py
    "dots3_note_text": rules.listed_layer_types,
    # window + compressed states per layer: compressed_attention.py
    "deepseek_v4": "hkv.model_specs.compressed_attention:compressed_layer_types",
    # attention per layer; its conv states: inkling_layers.py
    "inkling_text": "hkv.model_specs.inkling_layers:inkling_layer_types",
    # MiniMax-M3 (vLLM's text backbone, its VL wrapper's text_config, transformers' VL text model):
    # sparse layers refused, naming their index-key cache (layer_rules.minimax_m3_layers)
    **{family: rules.minimax_m3_layers for family in ("minimax_m3_text", "minimax_m3_vl_text")},
    # Classic dense / MoE families with their own key names (config_aliases.py): full attention
    # on every layer; LongCat-Flash's num_hidden_layers counts both MLA attentions of each block.
    **{family: rules.all_full for family in ("gpt2", "gptj", "gpt_bigcode", "bloom", "falcon", "opt", "dbrx",
                                             "mpt", "longcat_flash")},
    "starcoder2": rules.window_covers_context,  # vLLM applies its one sliding_window to every layer
    # vLLM 0.33 additions (docs/vllm_0_33.md): full + sliding attention per layer_types.
    "beam": rules.all_sliding,
    "flint": rules.all_full,  # FlintConfig's default: every layer full
    **{family: rules.muse_spark_layers for family in ("muse_spark", "muse_spark_text")},
    "alice_ai": rules.alice_ai_layers,  # gated full attention + Kimi delta attention per layer_types
    # looped: one cache per loop per recurrent layer, dory_layers.py
    "dory": "hkv.model_specs.dory_layers:dory_layer_types",
    # sparse layers: K/V + summary cache + CSA tail ring (step5_layers.py)
    **{family: "hkv.model_specs.step5_layers:step5_layer_types" for family in STEP5_FAMILIES},
    # Step-3.5/3.7-Flash: full / sliding per layer_types less its MTP tail (step3p7_model.py)
    **{family: "hkv.model_specs.step3p7_model:step3p7_layer_types" for family in STEP3P7_FAMILIES},
    # DomynEdge: full or sliding (window + 1) per window_sizes, head size per layer (domyn_edge_layers.py)
    **{family: "hkv.model_specs.domyn_edge_layers:domyn_edge_layer_types" for family in DOMYN_EDGE_FAMILIES},
}

# Attributes that mean "not plain full attention" for a model_type without a rule.
_HYBRID_HINTS = ("sliding_window", "attention_chunk_size", "sliding_window_pattern", "attn_layer_indices",
                 "attn_layer_period", "hybrid_override_pattern", "layers_block_type", "attn_type_list",
                 "full_attention_interval", "linear_attn_config", "num_kv_shared_layers", "ssm_state_size",
                 "kv_lora_rank", "window_sizes")  # window_sizes: DomynEdge's per-layer (window, 0) pairs


def classify_layers(view: ConfigView) -> tuple[tuple[LayerKind, ...], ...]:
    """The cache kinds each layer owns, in layer order (empty tuple: no cache)."""
    if view.family == "nemotron_h":
        return kinds_from_names(view, rules.nemotron_layer_types(view))
    num_layers = view.int_value("num_hidden_layers")
    rule = LAYER_RULES.get(view.family, _unknown_family)
    if isinstance(rule, str):
        rule = cast(rules.LayerRule, resolve(rule))
    return kinds_from_names(view, rule(view, num_layers))


def _unknown_family(view: ConfigView, n: int) -> LayerTypeList:
    """A model_type without a rule: its own attention-only layer_types, or plain full attention.

    Plain full attention is assumed only when no hybrid attribute is present; otherwise we would be
    guessing, so the config is rejected with the attributes that made it ambiguous.
    """
    explicit = rules.explicit_layer_types(view, n)
    if explicit is not None:
        return explicit
    hints = [key for key in _HYBRID_HINTS if view.has(key)] + sorted(
        key for key in view.values if key.startswith("mamba_") and view.has(key))
    if hints:
        raise InvalidConfigError(
            f"model_type {view.family!r} has no layer rule and sets {', '.join(hints)}; "
            "add layer_types to the config or a rule to hkv.model_specs.layer_classify")
    view.note(f"model_type {view.family!r} has no layer rule: assumed plain full attention on every layer")
    return rules.LayerTypeList("model_type", tuple("full_attention" for _ in range(n)))
