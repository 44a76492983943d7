"""Parameter count of MiniMax-M3's language model (vLLM minimax_m3_text, transformers minimax_m3_vl_text).

Per layer (transformers 5.24 models/minimax_m3_vl/modeling_minimax_m3_vl.py; vLLM's fused qkv_proj
holds the same weights): GQA q/k/v/o without bias plus per-head q_norm / k_norm (head_dim each), two
hidden-sized RMSNorms; a sparse-attention layer (INDEXER in its cache kinds) adds the lightning
indexer: q_proj (hidden -> index_n_heads x index_head_dim), k_proj (hidden -> index_head_dim) and
per-head q_norm / k_norm (index_head_dim each). The MLP is a dense gated MLP of
dense_intermediate_size, or on MoE layers a router (hidden -> num_local_experts, no bias; the
routing bias is a buffer) + num_local_experts gated experts of intermediate_size + one shared gated
MLP of shared_intermediate_size.

Which layers are MoE: transformers' mlp_layer_types ("sparse"), else moe_layer_freq (nonzero), else
the config class's default: every layer in transformers' class, the first 3 dense in vLLM's
MiniMaxM3TextConfig (`[0] * 3 + [1] * 57`). The index dims likewise come from transformers'
index_n_heads / index_head_dim or vLLM's sparse_attention_config (sparse_num_index_heads /
sparse_index_dim; MiniMaxM3TextConfig's defaults 4 and 128).
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.indexer_cache import minimax_m3_index_dim
from hkv.model_specs.layer_kinds import LayerKind
from hkv.model_specs.param_count_common import Kinds, decoder_total, gqa, hidden, norms

VLLM_DEFAULT_DENSE_MLP_LAYERS = 3  # MiniMaxM3TextConfig: moe_layer_freq = [0] * 3 + [1] * 57
DEFAULT_INDEX_HEADS = 4  # sparse_num_index_heads / index_n_heads
# MiniMaxM3TextConfig's (and transformers' MiniMaxM3VLTextConfig's) defaults for the MLP sizes.
CLASS_DEFAULTS = {"dense_intermediate_size": 12288, "shared_intermediate_size": 3072, "num_local_experts": 128}


def _size(view: ConfigView, key: str) -> int:
    return view.int_value(key, CLASS_DEFAULTS[key], why="the MiniMax-M3 config classes' default")
# Families whose config class makes every layer MoE when neither key is given (transformers').
ALL_MOE_BY_DEFAULT = frozenset({"minimax_m3_vl_text"})


def moe_layers(view: ConfigView, num_layers: int) -> set[int]:
    types = view.get("mlp_layer_types")
    if types is not None:
        return {i for i, kind in enumerate(types[:num_layers]) if kind == "sparse"}
    freq = view.get("moe_layer_freq")
    if freq is not None:
        return {i for i, flag in enumerate(freq[:num_layers]) if flag}
    first_moe = 0 if view.family in ALL_MOE_BY_DEFAULT else VLLM_DEFAULT_DENSE_MLP_LAYERS
    return set(range(first_moe, num_layers))


def indexer_params(view: ConfigView) -> int:
    sparse_cfg = view.get("sparse_attention_config") or {}
    heads = int(sparse_cfg.get("sparse_num_index_heads") or view.value("index_n_heads", DEFAULT_INDEX_HEADS))
    dim = minimax_m3_index_dim(view)
    return pb.linear(hidden(view), heads * dim) + pb.linear(hidden(view), dim) + 2 * dim


def moe_block(view: ConfigView) -> int:
    experts, size = _size(view, "num_local_experts"), view.int_value("intermediate_size")
    return (pb.linear(hidden(view), experts) + pb.routed_experts(experts, hidden(view), size)
            + pb.gated_mlp(hidden(view), _size(view, "shared_intermediate_size")))


def minimax_m3(view: ConfigView, kinds: Kinds) -> int:
    moe = moe_layers(view, len(kinds))
    attention = gqa(view, qkv_bias=False, o_bias=False, qk_norm=True)
    per_layer = (attention + (indexer_params(view) if LayerKind.INDEXER in layer else 0)
                 + (moe_block(view) if i in moe else pb.gated_mlp(hidden(view), _size(view, "dense_intermediate_size"))) + norms(view, 2)
                 for i, layer in enumerate(kinds))
    return decoder_total(view, per_layer)
