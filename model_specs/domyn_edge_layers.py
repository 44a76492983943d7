"""DomynEdge (vLLM 0.33 model_executor/models/domyn_edge.py, DomynEdgeForCausalLM): each layer's
window and head size, read from the keys vLLM 0.33 reads.

0.33 ships no config class for it (remote code, "Adapted from huggingface.co/domyn/Domyn-Edge-Base"),
so nothing fills these keys in; per layer i the model reads:
- `window_sizes[i][0]` (l.169): the checkpoint's flash-attn (w, 0) pair. w > 0 is a sliding window
  of w + 1 keys (l.106-107: "HF window (w, 0) attends to w+1 keys"); w <= 0 (the -1 of (-1, 0)) is
  full attention;
- `per_layer_config[i].head_dim` (l.165): transformers 5's per-layer view, the model-wide `head_dim`
  unless per_layer_config overrides it for that layer (per_layer_attention.py);
- `position_layers[i]` (l.145-156): "rope" or "nope" (anything else raises); no effect on the cache.
Every layer caches num_key_value_heads K/V heads of its own head size (l.97-108); none shares KV.

The igeniusai fork (vllm-domyn-edge, branch domyn-edge-leonardo) spelled the head sizes as a flat
`head_sizes` list instead; 0.33 does not read it, so a config whose head_sizes disagree with what
0.33 builds is refused rather than planned at a geometry the checkpoint's weights do not have.
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.family_sets import DOMYN_EDGE_FAMILIES as DOMYN_EDGE_FAMILIES
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer
from hkv.model_specs.layer_kinds import LayerKind, LayerTypeList
from hkv.model_specs.per_layer_attention import per_layer_overrides

_POSITION_TYPES = ("rope", "nope")


def domyn_edge_layer_types(view: ConfigView, n: int) -> LayerTypeList:
    """"sliding_attention" where window_sizes[i][0] > 0, else "full_attention"."""
    _check_position_layers(view, n)
    return LayerTypeList("window_sizes", tuple(
        "full_attention" if window is None else "sliding_attention" for window in window_lens(view, n)))


def window_lens(view: ConfigView, n: int) -> list[int | None]:
    """vLLM's per-layer sliding window (w + 1 keys), None for full-attention layers."""
    raw = view.get("window_sizes")
    if raw is None:
        raise InvalidConfigError(f"model_type {view.family!r} needs window_sizes (one [window, 0] pair per layer; "
                                 "vLLM 0.33 reads window_sizes[i][0], domyn_edge.py l.169, and has no default)")
    if not isinstance(raw, list) or len(raw) != n:
        raise InvalidConfigError(f"window_sizes must be a list of {n} [window, 0] pairs (num_hidden_layers), "
                                 f"got {len(raw) if isinstance(raw, list) else type(raw).__name__} entries")
    lens: list[int | None] = []
    for idx, pair in enumerate(raw):
        if (not isinstance(pair, list) or not pair or isinstance(pair[0], bool)
                or not isinstance(pair[0], int)):
            raise InvalidConfigError(f"window_sizes[{idx}] must be a [window, 0] pair of integers, got {pair!r}")
        lens.append(pair[0] + 1 if pair[0] > 0 else None)
    return lens


def head_dims(view: ConfigView, n: int) -> list[int]:
    """Each layer's head size as 0.33 builds it: per_layer_config's head_dim, else the global head_dim."""
    overrides = per_layer_overrides(view, ((),) * n)
    dims = [(overrides[i].head_dim if i in overrides else None) or view.int_value("head_dim") for i in range(n)]
    legacy = view.get("head_sizes")
    if legacy is not None and legacy != dims:
        first = next((i for i in range(n) if not isinstance(legacy, list) or i >= len(legacy)
                      or legacy[i] != dims[i]), 0)
        raise InvalidConfigError(
            f"head_sizes {legacy!r} disagrees at layer {first} with the head size vLLM 0.33 builds there "
            f"({dims[first]}: per_layer_config[{first}].head_dim, else head_dim; domyn_edge.py l.165 never reads "
            "head_sizes); write each layer's head size into per_layer_config")
    return dims


def domyn_edge_cache_layers(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...],
                            model_dtype: int) -> tuple[CacheLayer, ...]:
    """One K/V cache per layer: its own window (w + 1) and head size, num_key_value_heads heads."""
    del model_dtype  # K/V follow --kv-cache-dtype
    n = len(kinds)
    kv_heads = view.int_value("num_key_value_heads")
    return tuple(
        AttentionDesc(layer_idx=idx, kind=CacheKind.FULL if window is None else CacheKind.SLIDING,
                      num_kv_heads=kv_heads, head_dim=dim, head_dim_v=dim, window_len=window)
        for idx, (window, dim) in enumerate(zip(window_lens(view, n), head_dims(view, n))))


def _check_position_layers(view: ConfigView, n: int) -> None:
    raw = view.get("position_layers")
    if not isinstance(raw, list) or len(raw) != n or any(p not in _POSITION_TYPES for p in raw):
        raise InvalidConfigError(f"position_layers must list {n} entries of 'rope' / 'nope' (vLLM 0.33 reads "
                                 f"position_layers[i] for every layer, domyn_edge.py l.145-156), got {raw!r}")
