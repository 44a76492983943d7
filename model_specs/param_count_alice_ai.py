"""Parameter count of AliceAI from vLLM 0.33's model code (model_executor/models/alice_ai.py; 0.33 has no
config class and transformers no AliceAI model, so the count is worked from the module shapes).

Per layer (AliceAIDecoderBlock, l.307-377), as layer_types[i] says:
- "linear_attention": KimiGatedDeltaNetAttention on the flat KDA keys (l.118-137: linear_num_key_heads x
  linear_key_head_dim, kernel linear_conv_kernel_dim, low-rank gates): layers/mamba/gdn/kimi_gdn_linear_attn.py
  l.207-306, in_proj q|k|v|beta|f_a, f_b, dt_bias, conv1d, A_log, g_a, g_b, o_norm, o_proj (param_blocks.kda_mixer);
- "full_attention": Qwen3NextAttention with the output gate and no qkv bias (l.140-148): q (x 2 for the gate),
  k, v, o, q/k RMSNorms of head_dim;
- every layer an AliceAISparseMoeBlock (l.191-290): router num_experts x hidden, routed experts
  num_experts x 3 x hidden x moe_intermediate_size, shared_expert_gate hidden -> 1, and a gated shared expert
  of shared_expert_intermediate_size when that is > 0 (mlp_only_layers is not read);
- two GemmaRMSNorms, mlp_res_proj (hidden -> 1) + mlp_res_norm_weight, and from layer 1 on attn_res_proj +
  attn_res_norm_weight (l.356-377).
Plus the embedding, final norm, attnres_final (res_proj hidden -> 1 + res_norm_weight, l.151-161) and an lm_head
that is never tied (l.619). Left out: e_score_correction_bias (num_experts fp32 per layer, a non-trainable
parameter in vLLM, a buffer in hkv's convention) and the MTP weights vLLM drops ("mtp." prefix, l.582).
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import model_head_dim, num_kv_heads, num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.layer_kinds import LayerKind
from hkv.model_specs.param_count_common import Kinds, dense_mlp, has_kind, hidden, norms


def alice_ai(view: ConfigView, kinds: Kinds) -> int:
    h, vocab = hidden(view), view.int_value("vocab_size")
    kda = pb.kda_mixer(h, heads=view.int_value("linear_num_key_heads"), head_dim=view.int_value("linear_key_head_dim"),
                       conv_kernel=view.int_value("linear_conv_kernel_dim"))
    full = pb.gqa_attention(h, num_query_heads(view), num_kv_heads(view), model_head_dim(view), qk_norm=True,
                            q_gate=True)
    experts = view.int_value("num_experts")
    shared = dense_mlp(view, "shared_expert_intermediate_size") if view.int_value(
        "shared_expert_intermediate_size") > 0 else 0
    moe = (pb.linear(h, experts) + pb.routed_experts(experts, h, view.int_value("moe_intermediate_size"))
           + pb.linear(h, 1) + shared)
    residual_mix = pb.linear(h, 1) + h  # one AttnRes projection to a scalar + its norm weight
    per_layer = [(full if has_kind(layer, LayerKind.FULL) else kda) + moe + norms(view, 2) + residual_mix
                 + (residual_mix if idx > 0 else 0) for idx, layer in enumerate(kinds)]
    return 2 * vocab * h + h + residual_mix + sum(per_layer)
