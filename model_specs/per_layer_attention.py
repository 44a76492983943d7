"""Per-layer attention geometry for models whose layers differ in head size or KV heads.

transformers 5 stores such overrides in `per_layer_config` ({"05": {"head_dim": 512}, ...}, keys
zero-padded layer indices; HeterogeneousConfigMixin). Gemma 4 checkpoints saved before that write
`global_head_dim` / `num_global_key_value_heads` instead; Gemma4TextConfig turns them into the same
overrides for every full-attention layer: head_dim = global_head_dim (default 512), and
num_key_value_heads = num_global_key_value_heads when `attention_k_eq_v` (K and V share one
projection; vLLM still caches both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from hkv.model_specs.attention_dims import AttentionDims
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_kinds import LayerKind

GLOBAL_HEAD_DIM_DEFAULT = 512  # Gemma4TextConfig's global_head_dim when the key is absent
_OVERRIDABLE = ("head_dim", "num_key_value_heads")


@dataclass(frozen=True)
class LayerOverride:
    head_dim: int | None = None
    num_kv_heads: int | None = None


def per_layer_overrides(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...]) -> dict[int, LayerOverride]:
    """{layer index: its override}; layers not listed use the model-wide geometry."""
    raw = view.get("per_layer_config")
    if isinstance(raw, Mapping):
        return {_layer_index(key, len(kinds)): _override(key, entry) for key, entry in raw.items()}
    if view.family != "gemma4_text":
        return {}
    head_dim = view.int_value("global_head_dim", GLOBAL_HEAD_DIM_DEFAULT, why="Gemma4TextConfig default")
    kv_heads = view.get("num_global_key_value_heads") if view.get("attention_k_eq_v") else None
    override = LayerOverride(head_dim=head_dim, num_kv_heads=None if kv_heads is None else int(kv_heads))
    return {idx: override for idx, layer in enumerate(kinds) if LayerKind.FULL in layer}


def apply_override(dims: AttentionDims, override: LayerOverride | None) -> AttentionDims:
    """`dims` with the layer's own head size / KV heads (MLA latents are never overridden)."""
    if override is None or dims.is_mla:
        return dims
    head_dim = override.head_dim or dims.head_dim
    return replace(dims, num_kv_heads=override.num_kv_heads or dims.num_kv_heads, head_dim=head_dim,
                   head_dim_v=head_dim)


def _layer_index(key: object, num_layers: int) -> int:
    text = str(key)
    if not text.isdigit() or int(text) >= num_layers:
        raise InvalidConfigError(f"per_layer_config key {key!r} is not a layer index in 0..{num_layers - 1}")
    return int(text)


def _override(key: object, entry: object) -> LayerOverride:
    if not isinstance(entry, Mapping):
        raise InvalidConfigError(f"per_layer_config[{key!r}] must be an object, got {type(entry).__name__}")
    values = {}
    for name in _OVERRIDABLE:
        value = entry.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InvalidConfigError(f"per_layer_config[{key!r}].{name} must be a positive integer, got {value!r}")
        values[name] = value
    return LayerOverride(head_dim=values["head_dim"], num_kv_heads=values["num_key_value_heads"])
