"""The standard attribute names hkv reads, for families whose config.json spells them otherwise.

transformers' config classes of the older families expose `hidden_size`, `num_hidden_layers`, ...
through an `attribute_map` (GPT2Config: hidden_size -> n_embd), compute them in `__post_init__`
(FalconConfig: ffn_hidden_size = 4 x hidden_size when absent), or keep them in nested sub-configs
(DBRX: attn_config.kv_n_heads); a saved config.json keeps only the family's own spelling. vLLM 0.32's
model code, in turn, fixes some of them whatever the config says (GPT-2 caches every head's K/V).
`FAMILY_KEY_RULES` holds, per family, how each standard name is read: ConfigView consults it before
the config's own key, so the rest of model_specs reads one vocabulary.

A rule takes the ConfigView (reading other standard names through it, or raw paths with `at`) and
returns the value, or None to fall back to the config's own key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hkv.model_specs.nemotron_nas_layers import first_attention_kv_heads, largest_intermediate_size

if TYPE_CHECKING:
    from hkv.model_specs.config_view import ConfigView

KeyRule = Callable[["ConfigView"], Any]


def at(values: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path ("attn_config.kv_n_heads"); None when any step is missing."""
    node: Any = values
    for step in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(step)
    return node


def renamed(path: str) -> KeyRule:
    """The family's own spelling (a key or a dotted path into a sub-config)."""
    return lambda view: at(view.values, path)


def _every_head(view: ConfigView) -> int:
    """Multi-head attention fixed by the model code: vLLM's GPT-2 / GPT-J / BLOOM / OPT build
    Attention(num_heads, head_size) with no num_kv_heads, whatever the config says."""
    return view.int_value("num_attention_heads")


def _head_by_division(view: ConfigView) -> int:
    """hidden_size // num_attention_heads: the only head size these families' model code knows."""
    return view.int_value("hidden_size") // view.int_value("num_attention_heads")


def _four_hidden(view: ConfigView) -> int:
    """BLOOM's MLP width (dense_h_to_4h), which its config cannot change."""
    return 4 * view.int_value("hidden_size")


def _inner_or_four_hidden(inner_key: str) -> KeyRule:
    """GPT-2 / GPT-J / GPT-BigCode n_inner, Falcon ffn_hidden_size: null or absent means 4 x hidden."""
    def rule(view: ConfigView) -> int:
        inner = view.values.get(inner_key)
        return int(inner) if inner is not None else _four_hidden(view)
    return rule


def _falcon_kv_heads(view: ConfigView) -> int:
    """vLLM's FalconAttention: new_decoder_architecture -> num_kv_heads (n_head_kv in RW configs,
    else every head); else multi_query -> one KV head; else every head."""
    if view.value("new_decoder_architecture"):
        own = view.values.get("num_kv_heads", view.values.get("n_head_kv"))
        return int(own) if own is not None else view.int_value("num_attention_heads")
    return 1 if view.value("multi_query") else view.int_value("num_attention_heads")


def _bigcode_kv_heads(view: ConfigView) -> int:
    """GPTBigCodeConfig.__post_init__: num_key_value_heads = 1 if multi_query else n_head."""
    return 1 if view.value("multi_query") else view.int_value("num_attention_heads")


def _mpt_intermediate(view: ConfigView) -> int:
    return int(view.value("expansion_ratio")) * view.int_value("hidden_size")


def _longcat_layers(view: ConfigView) -> int | None:
    """LongcatFlashConfig.num_hidden_layers = 2 x num_layers: each block holds two MLA attentions."""
    blocks = view.values.get("num_layers")
    return None if blocks is None else 2 * int(blocks)


# Length keys vLLM also reads (ModelArchConfigConvertorBase.derive_max_model_len_and_key), smallest wins.
_OTHER_LENGTH_KEYS = ("seq_length", "max_sequence_length", "max_seq_length", "seq_len")


def _alibi_length(view: ConfigView) -> int | None:
    """BLOOM has no position limit (ALiBi) and no max_position_embeddings: vLLM takes the smallest
    other length key, else its default 2,048."""
    lengths = [int(view.values[k]) for k in _OTHER_LENGTH_KEYS if view.values.get(k) is not None]
    if lengths:
        return min(lengths)
    view.note("no max_position_embeddings (ALiBi positions have no limit): vLLM assumes 2,048 tokens "
              "unless --max-model-len says otherwise")
    return 2048


_GPT2_NAMES: dict[str, KeyRule] = {
    "hidden_size": renamed("n_embd"), "num_hidden_layers": renamed("n_layer"),
    "num_attention_heads": renamed("n_head"), "max_position_embeddings": renamed("n_positions"),
    "intermediate_size": _inner_or_four_hidden("n_inner"), "head_dim": _head_by_division,
}

FAMILY_KEY_RULES: dict[str, dict[str, KeyRule]] = {
    # AliceAI (vLLM 0.33 alice_ai.py l.118-137, l.695): KDA sized by the flat linear_* key spellings
    "alice_ai": {"linear_num_heads": renamed("linear_num_key_heads"), "linear_head_dim": renamed("linear_key_head_dim")},
    # Step-3.5/3.7-Flash's text config names its KV heads num_attention_groups (vLLM's step3p5.py)
    **{family: {"num_key_value_heads": renamed("num_attention_groups")} for family in ("step3p5", "step3p7")},
    "gpt2": {**_GPT2_NAMES, "num_key_value_heads": _every_head},
    "gptj": {**_GPT2_NAMES, "num_key_value_heads": _every_head},
    # Served by vLLM's Transformers backend, which reads the config object's num_key_value_heads.
    "gpt_bigcode": {**_GPT2_NAMES, "num_key_value_heads": _bigcode_kv_heads},
    # BloomConfig / FalconConfig still take the n_embed of older checkpoints (BLOOM-176B) over hidden_size.
    "bloom": {"hidden_size": renamed("n_embed"), "num_hidden_layers": renamed("n_layer"),
              "num_attention_heads": renamed("n_head"),
              "num_key_value_heads": _every_head, "head_dim": _head_by_division,
              "intermediate_size": _four_hidden,
              "max_position_embeddings": _alibi_length},
    "falcon": {"hidden_size": renamed("n_embed"), "num_key_value_heads": _falcon_kv_heads,
               "head_dim": _head_by_division,
               "intermediate_size": _inner_or_four_hidden("ffn_hidden_size")},
    "opt": {"num_key_value_heads": _every_head, "head_dim": _head_by_division,
            "intermediate_size": renamed("ffn_dim")},
    "dbrx": {"hidden_size": renamed("d_model"), "num_hidden_layers": renamed("n_layers"),
             "num_attention_heads": renamed("n_heads"), "max_position_embeddings": renamed("max_seq_len"),
             "num_key_value_heads": renamed("attn_config.kv_n_heads"), "head_dim": _head_by_division,
             "intermediate_size": renamed("ffn_config.ffn_hidden_size"),
             "num_local_experts": renamed("ffn_config.moe_num_experts"),
             "num_experts_per_tok": renamed("ffn_config.moe_top_k")},
    # transformers' MPT is multi-head only (attn_config.attn_type is not read); vLLM removed MPT in 0.28.
    "mpt": {"hidden_size": renamed("d_model"), "num_hidden_layers": renamed("n_layers"),
            "num_attention_heads": renamed("n_heads"), "max_position_embeddings": renamed("max_seq_len"),
            "num_key_value_heads": _every_head, "head_dim": _head_by_division,
            "intermediate_size": _mpt_intermediate},
    # Nemotron-NAS: null top-level keys, read from block_configs as vLLM does (nemotron_nas_layers.py)
    "nemotron-nas": {"num_key_value_heads": first_attention_kv_heads,
                     "intermediate_size": largest_intermediate_size},
    "longcat_flash": {"num_hidden_layers": _longcat_layers, "intermediate_size": renamed("ffn_hidden_size"),
                      "moe_intermediate_size": renamed("expert_ffn_hidden_size"),
                      "num_experts_per_tok": renamed("moe_topk")},
}


def key_rule(family: str, key: str) -> KeyRule | None:
    return FAMILY_KEY_RULES.get(family, {}).get(key)
