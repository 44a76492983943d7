"""Inkling (model_type inkling_text, vLLM 0.32's InklingForCausalLM): which layers are local and
what each decoder layer caches.

transformers' InklingTextConfig names each layer "hybrid" (full attention) or "hybrid_sliding"
(sliding-window attention); "hybrid" because every layer also runs short convolutions. Without
`layer_types` it derives them from `local_layer_ids` (the original checkpoints' key, the one vLLM
reads), else every layer but each sixth is local.

Per decoder layer vLLM registers two caches (vllm/models/inkling/nvidia/model.py,
`InklingDecoderLayer`: the conv owner is built first, so it comes first):

- `conv_state`: the short-conv streams (conv_state_cache.py), a SlidingWindowSpec of the conv
  kernel (window = block = `conv_kernel_size`, checkpoints' `sconv_kernel_size`) over the layer's
  KV heads (`swa_num_key_value_heads` on local layers);
- `attn`: FullAttentionSpec over `num_key_value_heads` x `head_dim`, or on local layers a
  SlidingWindowSpec over `swa_num_key_value_heads` x `swa_head_dim` with window
  `sliding_window_size` (nvidia/attention.py, `InklingAttention.get_kv_cache_spec`), both at the
  plan's block size.
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.conv_state_cache import ConvStateDesc, packed_conv_width
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer
from hkv.model_specs.layer_kinds import LayerKind, LayerTypeList
from hkv.model_specs.layer_rules import explicit_layer_types

# InklingTextConfig / vLLM's InklingModelConfig defaults
DEFAULT_CONV_KERNEL_LEN = 4
DEFAULT_WINDOW_LEN = 512
LOCAL_PERIOD = 6  # without layer_types or local_layer_ids: layer i is local unless (i + 1) % 6 == 0

# Inkling's layer-type names and the attention they run (the conv state comes with every layer).
_ATTENTION_OF = {"hybrid": "full_attention", "hybrid_sliding": "sliding_attention"}


def inkling_layer_types(view: ConfigView, n: int) -> LayerTypeList:
    """Each layer's attention as "full_attention" / "sliding_attention" (other names pass through,
    to be refused by the kind table); the conv states are added by `inkling_cache_layers`."""
    types = explicit_layer_types(view, n)
    if types is None:
        local = view.get("local_layer_ids")
        if local is None:
            view.note("layer_types and local_layer_ids absent: every layer but each sixth sliding "
                      "(InklingTextConfig's default)")
            ids = {i for i in range(n) if (i + 1) % LOCAL_PERIOD}
        else:
            if not isinstance(local, list) or any(not isinstance(i, int) or not 0 <= i < n for i in local):
                raise InvalidConfigError(f"local_layer_ids must be layer indices in 0..{n - 1}, got {local!r}")
            ids = set(local)
        types = LayerTypeList("local_layer_ids", tuple(
            "hybrid_sliding" if i in ids else "hybrid" for i in range(n)))
    return LayerTypeList(types.attribute, tuple(_ATTENTION_OF.get(name, name) for name in types.names))


def inkling_cache_layers(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...],
                         model_dtype: int) -> tuple[CacheLayer, ...]:
    """conv_state then attn for every layer, with the local or global geometry."""
    hidden = view.int_value("hidden_size")
    heads = view.int_value("num_attention_heads")
    head_dim = view.int_value("head_dim", hidden // heads)
    kv_heads = view.int_value("num_key_value_heads")
    swa_kv_heads = view.int_value("swa_num_key_value_heads", kv_heads)
    swa_head_dim = view.int_value("swa_head_dim", head_dim)
    window = view.int_value("sliding_window_size", DEFAULT_WINDOW_LEN, why="InklingTextConfig default")
    kernel = view.int_value("sconv_kernel_size") if view.has("sconv_kernel_size") else view.int_value(
        "conv_kernel_size", DEFAULT_CONV_KERNEL_LEN, why="InklingTextConfig default")
    for name, size in (("sliding_window_size", window), ("conv_kernel_size", kernel)):
        if size < 1:
            raise InvalidConfigError(f"{name}={size} must be >= 1")
    layers: list[CacheLayer] = []
    for idx, layer_kinds in enumerate(kinds):
        local = LayerKind.SLIDING in layer_kinds
        num_kv, dim = (swa_kv_heads, swa_head_dim) if local else (kv_heads, head_dim)
        if hidden % num_kv:
            raise InvalidConfigError(f"hidden_size {hidden} is not a multiple of the KV heads ({num_kv}) of "
                                     f"layer {idx}: the conv streams are split per KV head")
        layers.append(ConvStateDesc(
            layer_idx=idx, kind=CacheKind.SLIDING, num_kv_heads=num_kv, head_dim=packed_conv_width(dim, hidden, num_kv),
            head_dim_v=0, window_len=kernel, kernel_len=kernel, state_dtype_bytes=model_dtype))
        layers.append(AttentionDesc(
            layer_idx=idx, kind=CacheKind.SLIDING if local else CacheKind.FULL, num_kv_heads=num_kv,
            head_dim=dim, head_dim_v=dim, window_len=window if local else None))
    return tuple(layers)
