"""Weights of MiniMax-M2 / M2.5 / M2.7 (model_type minimax_m2, MiniMaxM2ForCausalLM), as vLLM 0.32
builds them (model_executor/models/minimax_m2.py); transformers 5.24's MiniMaxM2ForCausalLM holds the
same parameters.

Per layer: self_attn q/k/v/o without bias (attention_bias), q_norm over all query heads
(num_attention_heads x head_dim) and k_norm over all KV heads (MiniMaxText01RMSNormTP: split over
the TP ranks with the heads); block_sparse_moe: gate (hidden -> num_local_experts, no bias, fp32 in
vLLM) and num_local_experts experts w1 / w3 (hidden -> intermediate_size) and w2; two RMSNorms. No
shared expert, and every layer is MoE. Not counted: e_score_correction_bias (num_local_experts fp32
per layer: a parameter in vLLM, a buffer in transformers) and the MTP modules the checkpoint stores
after the decoder layers (num_mtp_modules: vLLM's loader drops them).
"""

from __future__ import annotations

from hkv.model_specs import param_breakdown_blocks as blk
from hkv.model_specs.attention_dims import model_head_dim, num_kv_heads, num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.param_breakdown import DenseWeight, Part
from hkv.model_specs.param_breakdown_blocks import Weights, weights_numel
from hkv.model_specs.param_count_common import Kinds, decoder_total, hidden

LM: Part = "language_model"


def minimax_m2_layer(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    heads, kv_heads, head_dim = num_query_heads(view), num_kv_heads(view), model_head_dim(view)
    attention = blk.attention(p, i, LM, hidden=hidden(view), q_heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                              qkv_bias=bool(view.value("attention_bias", False)))
    qk_norms = [DenseWeight(p + "self_attn.q_norm", heads * head_dim, LM, i, "sharded"),
                DenseWeight(p + "self_attn.k_norm", kv_heads * head_dim, LM, i, "sharded")]
    experts = blk.routed_experts(p, i, LM, num_experts=view.int_value("num_local_experts"), hidden=hidden(view),
                                 intermediate=view.int_value("intermediate_size"), name="block_sparse_moe")
    norms = blk.norms(p, i, LM, ("input_layernorm", "post_attention_layernorm"), hidden(view))
    return attention + qk_norms + experts + norms


def minimax_m2(view: ConfigView, kinds: Kinds) -> int:
    return decoder_total(view, (weights_numel(minimax_m2_layer(view, kinds, i, "")) for i in range(len(kinds))))
