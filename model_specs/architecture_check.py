"""Which configs hkv can interpret at all, decided from the config alone (before any layer rule).

A config is refused when its `architectures` name no causal-LM class (an encoder such as
BertModel, a classifier) or it is an encoder-decoder, and when its model_type has no family rule
and its config lacks the standard attribute names the generic rule reads (GPT-2 writes n_layer
and n_head, not num_hidden_layers and num_attention_heads): guessing there would plan a model
that is not the one in the config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hkv.model_specs.errors import UnsupportedArchitectureError
from hkv.model_specs.family_defaults import FAMILY_ALIASES
from hkv.model_specs.layer_classify import LAYER_RULES

# Class-name endings of transformers' generating heads (decoder-only LMs, multimodal wrappers).
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")
# What the generic rule (plain full attention) reads for a model_type without a rule.
_STANDARD_KEYS = ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size")
_RULE_FAMILIES = frozenset(LAYER_RULES) | {"nemotron_h"}


def supported_model_types() -> list[str]:
    return sorted(_RULE_FAMILIES | set(FAMILY_ALIASES))


def check_architecture(config: Mapping[str, Any], merged: Mapping[str, Any], family: str, name: str) -> None:
    """UnsupportedArchitectureError (one line) when hkv cannot interpret the config (module docstring)."""
    archs = [str(a) for a in config.get("architectures") or merged.get("architectures") or ()]
    label = f"architecture {archs[0]}" if archs else f"model_type {family!r}"
    if merged.get("is_encoder_decoder") is True:
        raise UnsupportedArchitectureError(
            f"{name}: {label} is an encoder-decoder model; hkv handles decoder-only causal LMs")
    if archs and not any(a.endswith(_CAUSAL_SUFFIXES) for a in archs):
        raise UnsupportedArchitectureError(
            f"{name}: {label} is not a causal language model (no ...ForCausalLM head); "
            "hkv handles decoder-only causal LMs")
    if family in _RULE_FAMILIES:
        return
    missing = [key for key in _STANDARD_KEYS if merged.get(key) is None]
    if missing:
        raise UnsupportedArchitectureError(
            f"{name}: {label} is not supported (model_type {family!r} has no rule and its config lacks "
            f"{', '.join(missing)}); supported model types: {', '.join(supported_model_types())}")
