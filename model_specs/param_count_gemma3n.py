"""Gemma 3n text-model parameter count (AltUp, LAuReL, per-layer inputs, KV-shared layers).

Counts Gemma3nForCausalLM (the language model). The audio and vision towers of the multimodal
checkpoint are not counted.
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import model_head_dim, num_kv_heads, num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.kv_sharing import kv_share_targets
from hkv.model_specs.param_count_common import Kinds, decoder_total, hidden, norms


def _layer_sizes(view: ConfigView, num_layers: int) -> list[int]:
    """intermediate_size is per layer in Gemma 3n (a list); a single int applies to every layer."""
    raw = view.value("intermediate_size")
    sizes = list(raw) if isinstance(raw, list) else [int(raw)] * num_layers
    return [int(s) for s in sizes]


def gemma3n(view: ConfigView, kinds: Kinds) -> int:
    h, n = hidden(view), len(kinds)
    q_heads, kv_heads, head_dim = num_query_heads(view), num_kv_heads(view), model_head_dim(view)
    bias = bool(view.value("attention_bias", False))
    altup = view.int_value("altup_num_inputs")
    per_layer_dim = view.int_value("hidden_size_per_layer_input")
    laurel_rank = view.int_value("laurel_rank")
    shared = kv_share_targets(view, kinds)

    per_layer = []
    for idx, size in enumerate(_layer_sizes(view, n)):
        # q_proj + q_norm + o_proj always; k/v projections and k_norm only on layers that own KV.
        attention = pb.linear(h, q_heads * head_dim, bias) + head_dim + pb.linear(q_heads * head_dim, h, bias)
        if idx not in shared:
            attention += 2 * pb.linear(h, kv_heads * head_dim, bias) + head_dim
        altup_block = h + altup * altup + altup * altup * altup + altup * h + h  # scale, coefs, router, norm
        laurel = 2 * h * laurel_rank + h
        per_layer_input = 2 * h * per_layer_dim + h  # gate, projection, norm
        per_layer.append(attention + pb.gated_mlp(h, size) + norms(view, 4) + altup_block + laurel
                         + per_layer_input)

    vocab_per_layer = view.int_value("vocab_size_per_layer_input")
    extra = (vocab_per_layer * n * per_layer_dim  # embed_tokens_per_layer
             + h * n * per_layer_dim + per_layer_dim  # per_layer_model_projection + its norm
             + 2 * (altup - 1) * h * h)  # altup_projections + altup_unembed_projections
    return decoder_total(view, per_layer, extra=extra)
