"""Parameter count of DeepSeek Sparse Attention decoders (DeepSeek-V3.2, GLM-5): DeepSeek-V3's MLA +
first-k-dense MoE decoder plus one lightning indexer per layer that builds one (indexer_cache.py).

The indexer (transformers DeepseekV32Indexer / GlmMoeDsaIndexer): wq_b (q_lora_rank -> index_n_heads x
index_head_dim), wk (hidden -> index_head_dim), k_norm (a LayerNorm: weight and bias of index_head_dim)
and weights_proj (hidden -> index_n_heads), none with a bias.
"""

from __future__ import annotations

from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.layer_kinds import LayerKind
from hkv.model_specs.param_count_attention import deepseek_v3
from hkv.model_specs.param_count_common import Kinds


def indexer_params(view: ConfigView) -> int:
    heads, head_dim = view.int_value("index_n_heads"), view.int_value("index_head_dim")
    hidden, q_lora = view.int_value("hidden_size"), view.int_value("q_lora_rank")
    return q_lora * heads * head_dim + hidden * head_dim + 2 * head_dim + hidden * heads


# transformers' DeepseekV32Attention builds an indexer in every layer, whatever IndexCache says
# (GlmMoeDsaAttention skips the sharing layers', as vLLM does).
EVERY_LAYER_INDEXER_FAMILIES = frozenset({"deepseek_v32"})


def dsa(view: ConfigView, kinds: Kinds) -> int:
    num_indexers = (len(kinds) if view.family in EVERY_LAYER_INDEXER_FAMILIES
                    else sum(LayerKind.INDEXER in layer for layer in kinds))
    return deepseek_v3(view, kinds) + num_indexers * indexer_params(view)
