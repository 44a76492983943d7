"""Parameter count of Nemotron-NAS / DeciLM from vLLM's model code (model_executor/models/nemotron_nas.py;
transformers 5.24 has no DeciLM model to check against).

Per layer i (nemotron_nas_layers.py reads block_configs[i]):
- with attention: LlamaAttention q/k/v/o at that layer's KV heads (biases per attention_bias) and
  input_layernorm;
- with an MLP: LlamaMLP gate/up/down of that layer's intermediate size (biases per mlp_bias) and
  post_attention_layernorm.
Plus the embedding, the final norm and an lm_head unless tie_word_embeddings.
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.nemotron_nas_layers import (attention_kv_heads, block_configs, ffn_intermediate_size,
                                                 has_attention, head_dim)
from hkv.model_specs.param_count_common import Kinds, decoder_total, hidden


def nemotron_nas(view: ConfigView, kinds: Kinds) -> int:
    h, heads, size = hidden(view), num_query_heads(view), head_dim(view)
    attn_bias, mlp_bias = bool(view.value("attention_bias", False)), bool(view.value("mlp_bias", False))
    per_layer = []
    for idx, block in enumerate(block_configs(view.values)):
        attention = 0
        if has_attention(block):
            kv_heads = attention_kv_heads(view.values, idx, block)
            attention = pb.gqa_attention(h, heads, kv_heads, size, qkv_bias=attn_bias, o_bias=attn_bias) + h
        inter = ffn_intermediate_size(view.values, idx, block)
        mlp = pb.gated_mlp(h, inter, mlp_bias) + h if inter else 0
        per_layer.append(attention + mlp)
    return decoder_total(view, per_layer)
