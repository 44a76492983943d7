"""Parameter count of Muse Spark's text stack (model_type muse_spark / muse_spark_text) from vLLM 0.33's
models/muse_spark/nvidia/model.py, equal to transformers 5.24's MuseSparkTextModel + lm_head.

Per layer (MuseSpark1xDecoderLayer l.1290-1425, HF text config):
- attention (l.945-1080): pre_qkv_proj_norm (hidden), one fused q | k | v | o_gate projection
  (2 x (heads + kv_heads) x head_dim rows: q, k, v and a heads x head_dim output gate), o_proj; the
  q/k and o norms have no weight;
- pre_ffn_norm and post_ffn_norm (hidden each; post_attn_norm has no weight), and the two
  norm-preserving residual gates add_attn / add_ffn (hidden each, common/layers.py l.249);
- by mlp_layer_types: a gated dense MLP of intermediate_size, or MuseSpark1xMoE (l.373-610): router
  num_local_experts x hidden, pooler hidden -> moe_hidden_size and unpooler back, pre_expert_norm and
  post_expert_norm (moe_hidden_size each), experts num_local_experts x 3 x moe_hidden_size x
  moe_intermediate_size (the expert_bias is a buffer). MuseSparkTextConfig refuses shared experts.
Plus the embedding (its norm has no weight), the final norm and the lm_head unless tied.
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.param_count_common import Kinds, decoder_total, dense_mlp, gqa, hidden, norms


def muse_spark(view: ConfigView, kinds: Kinds) -> int:
    n, h = len(kinds), hidden(view)
    mlp_types = view.get("mlp_layer_types")
    if not isinstance(mlp_types, list) or len(mlp_types) != n or not set(mlp_types) <= {"sparse", "dense"}:
        raise InvalidConfigError(f"mlp_layer_types must be {n} entries of 'sparse' / 'dense' (MuseSparkTextConfig "
                                 f"requires them), got {mlp_types!r}")
    experts, moe_hidden = view.int_value("num_local_experts"), view.int_value("moe_hidden_size")
    moe = (pb.linear(h, experts) + 2 * pb.linear(h, moe_hidden) + 2 * moe_hidden
           + pb.routed_experts(experts, moe_hidden, view.int_value("moe_intermediate_size")))
    mlp = {"sparse": moe, "dense": dense_mlp(view) if "dense" in mlp_types else 0}
    layer = gqa(view, qkv_bias=False, o_bias=False, q_gate=True) + norms(view, 3) + 2 * h  # + residual gates
    return decoder_total(view, [layer + mlp[kind] for kind in mlp_types])
