"""Speculative-decoding draft layers whose KV joins the target's KV cache groups in vLLM.

MTP layers (Qwen3-Next / Qwen3.5 `mtp_num_hidden_layers`, DeepSeek-V3 / GLM-4.5
`num_nextn_predict_layers`) and EAGLE heads are decoder layers attending over the whole context:
each is one more full-attention layer shaped like the target's own full-attention layers (an
EAGLE head whose geometry differs is not modeled), numbered after the target's layers.
"""

from __future__ import annotations

from dataclasses import replace

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer


def full_attention_drafts(layers: tuple[CacheLayer, ...], num_layers: int, count: int) -> tuple[CacheLayer, ...]:
    """`count` draft layers copying the first full-attention layer that owns its KV; () for 0.
    Raises InvalidConfigError when `count` > 0 and the model has no such layer to copy."""
    if count <= 0:
        return ()
    full = next((layer for layer in layers if isinstance(layer, AttentionDesc) and layer.kind is CacheKind.FULL
                 and layer.kv_shared_with is None), None)
    if full is None:
        raise InvalidConfigError("draft layers attend like the model's full-attention layers, but this model has "
                                 "none to copy")
    return tuple(replace(full, layer_idx=num_layers + i) for i in range(count))
