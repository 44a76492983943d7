"""Parameter counts of the classic families (GPT-2, GPT-BigCode, GPT-J, BLOOM, Falcon, OPT, MPT,
StarCoder2, DBRX, LongCat-Flash); each mirrors its transformers module tree.

They read the standard names (config_aliases.py maps n_embd, d_model, ffn_dim, ... onto them).
Norms here are LayerNorms: weight and bias (2 x hidden) unless the family drops the bias.
"""

from __future__ import annotations

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.attention_dims import model_head_dim, num_kv_heads, num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.param_count_common import Kinds, decoder_total, hidden, is_tied, mla, norms


def _attention(view: ConfigView, *, bias: bool) -> int:
    """q/k/v/o (fused or not, the count is the same) with the family's KV heads."""
    return pb.gqa_attention(hidden(view), num_query_heads(view), num_kv_heads(view), model_head_dim(view),
                            qkv_bias=bias, o_bias=bias)


def _mlp(view: ConfigView, *, bias: bool) -> int:
    """Up / down projections (GELU or ReLU, not gated)."""
    return pb.plain_mlp(hidden(view), view.int_value("intermediate_size"), bias)


def _layer_norms(view: ConfigView, count: int) -> int:
    return 2 * norms(view, count)


def _learned_positions(view: ConfigView, offset: int = 0) -> int:
    return (view.int_value("max_position_embeddings") + offset) * hidden(view)


def gpt2(view: ConfigView, kinds: Kinds) -> int:
    """GPT-2 / GPT-BigCode: learned positions, c_attn + c_proj and c_fc + c_proj with biases, two
    LayerNorms per layer and ln_f (GPT-BigCode's c_attn is narrower: one KV head under multi_query)."""
    layer = _layer_norms(view, 2) + _attention(view, bias=True) + _mlp(view, bias=True)
    return decoder_total(view, [layer] * len(kinds), extra=hidden(view) + _learned_positions(view))


def gptj(view: ConfigView, kinds: Kinds) -> int:
    """GPT-J: one LayerNorm feeds attention (no biases) and MLP (biases) in parallel; the lm_head has a bias."""
    layer = _layer_norms(view, 1) + _attention(view, bias=False) + _mlp(view, bias=True)
    return decoder_total(view, [layer] * len(kinds), extra=hidden(view) + view.int_value("vocab_size"))


def bloom(view: ConfigView, kinds: Kinds) -> int:
    """BLOOM: a LayerNorm on the embeddings, biases everywhere, MLP of 4 x hidden."""
    layer = _layer_norms(view, 2) + _attention(view, bias=True) + _mlp(view, bias=True)
    return decoder_total(view, [layer] * len(kinds), extra=hidden(view) + _layer_norms(view, 1))


def _falcon_norms(view: ConfigView) -> int:
    """Sequential blocks: two LayerNorms; parallel ones: ln_attn + ln_mlp when num_ln_in_parallel_attn
    is 2 (its default under new_decoder_architecture), else one input_layernorm."""
    if not view.value("parallel_attn"):
        return 2
    default = 2 if view.value("new_decoder_architecture") else 1
    return int(view.get("num_ln_in_parallel_attn") or default)


def falcon(view: ConfigView, kinds: Kinds) -> int:
    bias = bool(view.value("bias"))
    layer = _layer_norms(view, _falcon_norms(view)) + _attention(view, bias=bias) + _mlp(view, bias=bias)
    return decoder_total(view, [layer] * len(kinds), extra=hidden(view))


def opt(view: ConfigView, kinds: Kinds) -> int:
    """OPT: token embeddings of word_embed_proj_dim (projected in and out when it differs from hidden),
    positions offset by 2, biases on every linear (enable_bias)."""
    h, vocab = hidden(view), view.int_value("vocab_size")
    proj = int(view.get("word_embed_proj_dim") or h)
    bias, affine = bool(view.value("enable_bias")), bool(view.value("layer_norm_elementwise_affine"))
    norm = 2 * h if affine else 0
    layer = 2 * norm + _attention(view, bias=bias) + _mlp(view, bias=bias)
    final_norm = norm if view.value("do_layer_norm_before") and not view.get("_remove_final_layer_norm") else 0
    projections = 2 * proj * h if proj != h else 0
    lm_head = 0 if is_tied(view) else vocab * proj
    return (vocab * proj + _learned_positions(view, offset=2) + projections + len(kinds) * layer + final_norm
            + lm_head)


def mpt(view: ConfigView, kinds: Kinds) -> int:
    """MPT as transformers builds it: no biases at all (norms weight-only), multi-head attention."""
    layer = norms(view, 2) + _attention(view, bias=False) + _mlp(view, bias=False)
    return decoder_total(view, [layer] * len(kinds))


def starcoder2(view: ConfigView, kinds: Kinds) -> int:
    bias = bool(view.value("use_bias"))
    layer = _layer_norms(view, 2) + _attention(view, bias=bias) + _mlp(view, bias=bias)
    return decoder_total(view, [layer] * len(kinds), extra=hidden(view))


def dbrx(view: ConfigView, kinds: Kinds) -> int:
    """DBRX: bias-free LayerNorms, fused Wqkv, router + GLU experts (w1, v1, w2) in every layer."""
    h, experts = hidden(view), view.int_value("num_local_experts")
    moe = pb.linear(h, experts) + pb.routed_experts(experts, h, view.int_value("intermediate_size"))
    layer = norms(view, 2) + _attention(view, bias=False) + moe
    return decoder_total(view, [layer] * len(kinds))


def longcat_flash(view: ConfigView, kinds: Kinds) -> int:
    """LongCat-Flash: per block two MLA attentions, two dense gated MLPs, four RMSNorms and one MoE
    whose router also scores the zero (identity) experts. `kinds` lists both attentions of a block.

    The experts are counted as vLLM loads them: n_routed_experts gated MLPs. transformers 5.24 also
    allocates gate_up_proj rows for the zero_expert_num identity experts, which have no weights in
    a checkpoint (and which vLLM does not build); they are left out.
    """
    h, experts = hidden(view), view.int_value("n_routed_experts")
    router = pb.linear(h, experts + int(view.value("zero_expert_num")))
    moe = router + pb.routed_experts(experts, h, view.int_value("moe_intermediate_size"))
    block = 2 * mla(view) + 2 * pb.gated_mlp(h, view.int_value("intermediate_size")) + norms(view, 4) + moe
    return decoder_total(view, [block] * (len(kinds) // 2))


COUNTERS = {"gpt2": gpt2, "gpt_bigcode": gpt2, "gptj": gptj, "bloom": bloom, "falcon": falcon, "opt": opt,
            "mpt": mpt, "starcoder2": starcoder2, "dbrx": dbrx, "longcat_flash": longcat_flash}
