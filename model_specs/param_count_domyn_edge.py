"""Parameter count of DomynEdge from vLLM 0.33's model code (model_executor/models/domyn_edge.py;
transformers has no DomynEdge model to check against).

Per layer i, with that layer's head size d_i (domyn_edge_layers.head_dims):
- qkv_proj hidden -> (heads + 2 x kv_heads) x d_i and o_proj heads x d_i -> hidden, no biases (l.68-84);
- k_norm: d_i weights; q_norm is built with has_weight=False (l.109-110);
- Qwen2MLP: gate_up hidden -> 2 x intermediate_size, down back, no biases (l.172-178, qwen2.py l.91-104);
- four hidden-sized RMSNorms around attention and MLP (l.179-184).
Plus Qwen2Model's embedding and final norm, and an lm_head unless tie_word_embeddings (l.253-261).
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import num_kv_heads, num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.domyn_edge_layers import head_dims
from hkv.model_specs.param_count_common import Kinds, decoder_total, dense_mlp, hidden, norms


def domyn_edge(view: ConfigView, kinds: Kinds) -> int:
    heads, kv_heads = num_query_heads(view), num_kv_heads(view)
    per_layer = [pb.gqa_attention(hidden(view), heads, kv_heads, dim) + dim + dense_mlp(view) + norms(view, 4)
                 for dim in head_dims(view, len(kinds))]
    return decoder_total(view, per_layer)
