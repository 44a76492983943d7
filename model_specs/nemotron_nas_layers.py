"""Nemotron-NAS / DeciLM (model_type "nemotron-nas", DeciLMForCausalLM; Llama-3.3-Nemotron-Super-49B,
Llama-3.1-Nemotron-Ultra-253B): a Llama decoder whose layers were pruned one by one, each described
by `block_configs[i]`, read as vLLM 0.29-0.32 reads them (model_executor/models/nemotron_nas.py,
DeciLMDecoderLayer):
- `attention.no_op` true: the layer has no attention and no KV cache; otherwise Llama attention with
  num_attention_heads // `attention.n_heads_in_group` KV heads, head size hidden // heads;
- `ffn.no_op` true: no MLP; otherwise a Llama MLP of `ffn.intermediate_size`, or, given
  `ffn.ffn_mult`, int(2 x ffn_mult x hidden / 3) rounded up to a multiple of 256 (its
  `_ffn_mult_to_intermediate_size`);
- the top-level `num_key_value_heads` and `intermediate_size` are null; vLLM's
  NemotronNasModelArchConfigConvertor takes the KV heads of the first layer with attention
  (transformers_utils/model_arch_config_convertor.py), and hkv reports the largest MLP as the
  model's intermediate size (the dense MLP the profile run's activations peak in).
vLLM never reads `replace_with_linear` (a linear layer in place of attention or MLP): it builds the
attention / MLP anyway and the checkpoint's weights would not load, so such configs are refused.

config_aliases.py reads the two top-level keys through this module; the module therefore imports
nothing that imports ConfigView at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer

if TYPE_CHECKING:
    from hkv.model_specs.config_view import ConfigView

NEMOTRON_NAS_FAMILY = "nemotron-nas"
_FFN_MULTIPLE = 256  # DeciLM's _find_multiple(intermediate_size, 256)


def block_configs(values: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The per-layer blocks, checked: one {"attention": {...}, "ffn": {...}} per layer."""
    blocks = values.get("block_configs")
    num_layers = values.get("num_hidden_layers")
    if not isinstance(blocks, list) or (isinstance(num_layers, int) and len(blocks) != num_layers):
        found = len(blocks) if isinstance(blocks, list) else type(blocks).__name__
        raise InvalidConfigError(f"model_type {NEMOTRON_NAS_FAMILY!r} needs block_configs, one per layer "
                                 f"(num_hidden_layers {num_layers}); got {found}")
    for idx, block in enumerate(blocks):
        for part in ("attention", "ffn"):
            sub = block.get(part) if isinstance(block, Mapping) else None
            if not isinstance(sub, Mapping):
                raise InvalidConfigError(f"block_configs[{idx}].{part} must be an object, got {sub!r}")
            if sub.get("replace_with_linear"):
                raise InvalidConfigError(
                    f"block_configs[{idx}].{part}.replace_with_linear is true: vLLM's DeciLMDecoderLayer "
                    f"never builds the linear replacement (it builds the {part} and the checkpoint's weights "
                    "would not load), so hkv cannot plan this model")
    return blocks


def has_attention(block: Mapping[str, Any]) -> bool:
    return not block["attention"].get("no_op")


def attention_kv_heads(values: Mapping[str, Any], idx: int, block: Mapping[str, Any]) -> int:
    group = block["attention"].get("n_heads_in_group")
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise InvalidConfigError(f"block_configs[{idx}].attention.n_heads_in_group must be a positive "
                                 f"integer for a layer with attention, got {group!r}")
    return int(values["num_attention_heads"]) // group


def ffn_intermediate_size(values: Mapping[str, Any], idx: int, block: Mapping[str, Any]) -> int:
    """The layer's MLP width; 0 for a no-op MLP."""
    ffn = block["ffn"]
    if ffn.get("no_op"):
        return 0
    if ffn.get("ffn_mult") is not None:
        size = int(2 * float(ffn["ffn_mult"]) * int(values["hidden_size"]) / 3)
        return -(-size // _FFN_MULTIPLE) * _FFN_MULTIPLE
    if isinstance(ffn.get("intermediate_size"), int):
        return int(ffn["intermediate_size"])
    raise InvalidConfigError(f"block_configs[{idx}].ffn needs ffn_mult or intermediate_size")


def first_attention_kv_heads(view: ConfigView) -> int:
    """vLLM's NemotronNasModelArchConfigConvertor.get_total_num_kv_heads."""
    for idx, block in enumerate(block_configs(view.values)):
        if has_attention(block):
            return attention_kv_heads(view.values, idx, block)
    raise InvalidConfigError(f"model_type {NEMOTRON_NAS_FAMILY!r}: no block_configs entry has attention")


def largest_intermediate_size(view: ConfigView) -> int:
    return max(ffn_intermediate_size(view.values, idx, block)
               for idx, block in enumerate(block_configs(view.values)))


def layer_type_names(view: ConfigView, n: int) -> tuple[str, ...]:
    """"full_attention" for a layer with attention, "mlp" (no cache) for a no-op attention."""
    blocks = block_configs(view.values)
    if len(blocks) != n:
        raise InvalidConfigError(f"block_configs has {len(blocks)} entries but num_hidden_layers is {n}")
    if any(block["attention"].get("window_length") is not None for block in blocks if has_attention(block)):
        view.note("block_configs set attention.window_length, which vLLM's DeciLM does not read: "
                  "planned as full attention, as vLLM builds it")
    return tuple("full_attention" if has_attention(block) else "mlp" for block in blocks)


def head_dim(view: ConfigView) -> int:
    """LlamaAttention's head_dim: the config's, else hidden_size // num_attention_heads."""
    return view.int_value("head_dim", view.int_value("hidden_size") // view.int_value("num_attention_heads"))


def nemotron_nas_cache_layers(view: ConfigView, kinds: tuple[tuple[Any, ...], ...],
                              model_dtype: int) -> tuple[CacheLayer, ...]:
    """One full-attention K/V cache per layer with attention, at that layer's own KV heads."""
    del model_dtype  # K/V follow --kv-cache-dtype
    blocks, size = block_configs(view.values), head_dim(view)
    return tuple(
        AttentionDesc(layer_idx=idx, kind=CacheKind.FULL, head_dim=size, head_dim_v=size,
                      num_kv_heads=attention_kv_heads(view.values, idx, block))
        for idx, block in enumerate(blocks) if kinds[idx])
