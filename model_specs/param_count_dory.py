"""Parameter count of Dory from vLLM 0.33's model code (model_executor/models/dory.py).

vLLM builds one sublayer per layer, attention or MLP as `layer_types[i]` says ("mlp": MLP), l.207-221:
- attention: qkv_proj (heads + 2 x kv_heads) x head_dim, g_proj and o_proj heads x head_dim, no biases
  (l.69-91), the nGPT scales sqk and s_gate of heads x head_dim each (l.93-94), attn_alpha (hidden);
- MLP: gate_up hidden -> 2 x intermediate_size, down back, no biases (l.171-184), suv_gate and suv_up
  (intermediate_size each, l.185-186), mlp_alpha (hidden).
Every norm is a weightless justnorm; no final norm. Embedding, an untied lm_head and its per-token
logit_scale (vocab, l.303-309). Looping reuses the same weights.

transformers 5.24's Dory builds attention and an MLP in every layer (lambda_1 / lambda_2 for the two
alphas) with the same modules, so a vLLM config of 2N alternating layers counts what transformers' N
layers count (test_param_counts_0_33.py checks that).
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import num_kv_heads, num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.param_count_common import Kinds, hidden, is_attention


def dory(view: ConfigView, kinds: Kinds) -> int:
    h, ffn, vocab = hidden(view), view.int_value("intermediate_size"), view.int_value("vocab_size")
    heads, q_size = num_query_heads(view), num_query_heads(view) * view.int_value("head_dim")
    attention = (pb.gqa_attention(h, heads, num_kv_heads(view), view.int_value("head_dim"))
                 + pb.linear(h, q_size) + 2 * q_size + h)
    mlp = pb.gated_mlp(h, ffn) + 2 * ffn + h
    return 2 * vocab * h + vocab + sum(attention if is_attention(layer) else mlp for layer in kinds)
