"""Parameter count of Flint (transformers 5.24 models/flint/modeling_flint.py; vLLM 0.33 serves it).

Per layer: GQA with q/k RMSNorm and one fp32 attention-sink logit per head, two hidden-sized norms, and
either a routed MoE with an always-added shared expert (router num_experts x hidden, experts
num_experts x 3 x hidden x moe_intermediate_size, shared gated MLP of shared_expert_intermediate_size) or,
for mlp_only_layers, a gated dense MLP of intermediate_size.
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.param_count_common import Kinds, decoder_total, dense_mlp, gqa, hidden, norms, qwen_sparse_layers


def flint(view: ConfigView, kinds: Kinds) -> int:
    n = len(kinds)
    sparse = qwen_sparse_layers(view, n)
    experts = view.int_value("num_experts")
    moe = (pb.linear(hidden(view), experts) + pb.routed_experts(experts, hidden(view),
                                                                view.int_value("moe_intermediate_size"))
           + dense_mlp(view, "shared_expert_intermediate_size"))
    attention = gqa(view, qk_norm=True) + num_query_heads(view)
    return decoder_total(view, [attention + (moe if i in sparse else dense_mlp(view)) + norms(view, 2)
                                for i in range(n)])
