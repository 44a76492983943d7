"""MiMo-V2-Flash (model_type mimo_v2_flash, MiMoV2FlashForCausalLM): sliding-window and full attention
layers of different geometry, read as vLLM 0.29-0.32 reads them (model_executor/models/mimo_v2.py,
MiMoV2FlashDecoderLayer):
- layer i is sliding when `hybrid_layer_pattern[i]` is 1, else full attention;
- a sliding layer caches `swa_num_key_value_heads` K/V heads of `swa_head_dim` keys and
  `swa_v_head_dim` values (attention sinks, no extra cache) over a window of `sliding_window_size`;
- a full layer caches `num_key_value_heads` heads of `head_dim` keys and `v_head_dim` values.
The released config also sets `attention_chunk_size` (128); the model has no chunked attention, and
vLLM deletes the key before planning its cache (transformers_utils/model_arch_config_convertor.py,
_strip_mimo_v2_attention_chunk_size: "the architecture does not actually use chunked local
attention"), so hkv ignores it too.

A config saved by transformers 5 (MiMoV2FlashConfig) has none of the hybrid_layer_pattern / swa_*
keys: it lists `layer_types`, gives sliding layers twice num_key_value_heads (modeling_mimo_v2_flash.py,
"SWA layers double the kv heads") at head_dim / v_head_dim, and stores sliding_window as
sliding_window_size + 1; hkv reads that form the same way, with a note.
"""

from __future__ import annotations

from typing import Any

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer

MIMO_V2_FAMILIES = ("mimo_v2_flash",)
_PATTERN_NAMES = {1: "sliding_attention", 0: "full_attention"}


def mimo_v2_layer_type_names(view: ConfigView, n: int) -> tuple[str, ...]:
    pattern = view.get("hybrid_layer_pattern")
    if pattern is None:
        listed = view.get("layer_types")
        if isinstance(listed, list) and len(listed) == n:
            view.note("hybrid_layer_pattern absent: layers read from transformers' layer_types")
            return tuple(str(name) for name in listed)
        raise InvalidConfigError(f"model_type {view.family!r} needs hybrid_layer_pattern (vLLM's mimo_v2.py "
                                 "reads hybrid_layer_pattern[i]: 1 sliding, 0 full) or layer_types")
    if not isinstance(pattern, list) or len(pattern) != n or any(p not in _PATTERN_NAMES for p in pattern):
        raise InvalidConfigError(f"hybrid_layer_pattern must list {n} entries of 0 (full) or 1 (sliding), "
                                 f"got {pattern!r}")
    return tuple(_PATTERN_NAMES[p] for p in pattern)


def _sliding_geometry(view: ConfigView) -> tuple[int, int, int, int]:
    """(KV heads, key head size, value head size, window) of the sliding layers."""
    if view.has("swa_num_key_value_heads"):
        heads = view.int_value("swa_num_key_value_heads")
    else:
        heads = 2 * view.int_value("num_key_value_heads")
        view.note("swa_num_key_value_heads absent: sliding layers at twice num_key_value_heads "
                  "(MiMoV2FlashConfig)")
    key = view.int_value("swa_head_dim", view.int_value("head_dim"))
    value = view.int_value("swa_v_head_dim", view.int_value("v_head_dim", key))
    if view.has("sliding_window_size"):
        window = view.int_value("sliding_window_size")
    else:
        window = view.int_value("sliding_window") - 1
        view.note(f"sliding_window_size absent: window {window} "
                  "(transformers stores sliding_window_size + 1)")
    return heads, key, value, window


def mimo_v2_cache_layers(view: ConfigView, kinds: tuple[tuple[Any, ...], ...],
                         model_dtype: int) -> tuple[CacheLayer, ...]:
    """One K/V cache per layer, sliding or full per hybrid_layer_pattern, at that kind's geometry."""
    del model_dtype  # K/V follow --kv-cache-dtype
    names = mimo_v2_layer_type_names(view, len(kinds))
    full_key = view.int_value("head_dim")
    full = (view.int_value("num_key_value_heads"), full_key, view.int_value("v_head_dim", full_key))
    sliding = _sliding_geometry(view) if "sliding_attention" in names else None
    layers: list[CacheLayer] = []
    for idx, name in enumerate(names):
        if name == "sliding_attention":
            assert sliding is not None
            heads, key, value, window = sliding
            layers.append(AttentionDesc(layer_idx=idx, kind=CacheKind.SLIDING, num_kv_heads=heads,
                                        head_dim=key, head_dim_v=value, window_len=window))
        else:
            heads, key, value = full
            layers.append(AttentionDesc(layer_idx=idx, kind=CacheKind.FULL, num_kv_heads=heads, head_dim=key,
                                        head_dim_v=value))
    return tuple(layers)
