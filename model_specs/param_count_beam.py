"""Parameter count of Beam (transformers 5.24 models/beam/modeling_beam.py; vLLM 0.33 serves it).

Per layer: GQA with q/k RMSNorm and an output gate (gate_proj: hidden -> heads x head_dim, plus one
gate_bias per head), four hidden-sized norms, and per `mlp_layer_types` either a routed MoE (router
num_experts x hidden, experts num_experts x 3 x hidden x moe_intermediate_size; the score-correction
bias is a buffer, not a parameter) or a gated dense MLP of intermediate_size. BeamConfig's default
marks every layer "sparse".
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.param_count_common import Kinds, decoder_total, dense_mlp, gqa, hidden, norms


def beam(view: ConfigView, kinds: Kinds) -> int:
    n = len(kinds)
    mlp_types = view.get("mlp_layer_types") or ["sparse"] * n
    if len(mlp_types) != n or not set(mlp_types) <= {"sparse", "dense"}:
        raise InvalidConfigError(f"mlp_layer_types must be {n} entries of 'dense' / 'sparse', got {mlp_types!r}")
    experts = view.int_value("num_experts")
    moe = experts * hidden(view) + experts * pb.gated_mlp(hidden(view), view.int_value("moe_intermediate_size"),
                                                          False)
    mlp = {"sparse": moe, "dense": dense_mlp(view)}
    attention = gqa(view, qk_norm=True, q_gate=True) + num_query_heads(view)
    return decoder_total(view, [attention + mlp[kind] + norms(view, 4) for kind in mlp_types])
