"""Gemma 4's ParamBreakdown as vLLM builds it: the decoder layers (vllm/model_executor/models/
gemma4.py Gemma4Model), its rotary caches and per-layer-input buffer, and the gemma4_vision tower.

Decoder layer, under the checkpoint's names ("model.language_model.layers.N."):
  self_attn  q_proj, o_proj and q_norm at the layer's head_dim (full layers: global_head_dim);
             k_proj, v_proj and k_norm at the layer's KV heads. vLLM builds one QKVParallelLinear
             and a k_norm on every layer, so the K / V slots the checkpoint lacks (layers reading
             another layer's KV, num_kv_shared_layers; V on attention_k_eq_v full layers, loaded
             with K's weights) are allocated all the same: `allocated_only`
  mlp        gate / up / down (double width on KV-shared layers with use_double_wide_mlp)
  router     proj (hidden -> experts) + scale + per_expert_scale; experts (stacked w13 / w2, the
             module "experts" next to mlp, not under it: ModelOpt's nvfp4_experts_only excludes
             "layers.N.mlp*" and keeps the experts); three more norms with the MoE block
  per-layer  per_layer_input_gate, per_layer_projection, post_per_layer_input_norm (E2B / E4B)
Model-wide: embed_tokens_per_layer (vocab_size_per_layer_input x layers x per-layer width, vocab
parallel), per_layer_model_projection and per_layer_projection_norm.
Load-time buffers: one rotary cos/sin cache per layer type (get_rope at the type's head_dim;
the "proportional" rope of full layers, Gemma4RotaryEmbedding, spans the whole head_dim whatever
partial_rotary_factor says), max_position_embeddings rows, model dtype; and
Gemma4ForConditionalGeneration's per_layer_embeddings buffer, max_num_batched_tokens x layers x
hidden_size_per_layer_input in the model dtype (gemma4_mm.py), built with the language model.
Vision tower (gemma4_vision, transformers' Gemma4VisionModel): patch embedding (3 x patch^2 ->
hidden), a two-axis position table (2 x position_embedding_size x hidden), per block q/k/v/o,
q/k norms, a gated MLP and four norms, then the projector into the text model (embed_vision:
hidden -> text hidden). transformers' module under vLLM: every linear replicated over TP ranks
(recursive_replace_linear "replicate").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hkv.model_specs.attention_dims import model_head_dim, num_kv_heads, num_query_heads
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.kv_sharing import kv_share_targets
from hkv.model_specs.layer_kinds import LayerKind
from hkv.model_specs.param_breakdown import EMBED_LAYER, DenseWeight, LinearWeight, Part
from hkv.model_specs.param_breakdown_blocks import Weights, gated_mlp, norms
from hkv.model_specs.param_count_common import Kinds
from hkv.model_specs.per_layer_attention import per_layer_overrides

LM: Part = "language_model"
V: Part = "vision"
_FOUR_NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
               "post_feedforward_layernorm")
_MOE_NORMS = ("post_feedforward_layernorm_1", "pre_feedforward_layernorm_2", "post_feedforward_layernorm_2")


def _attention(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    override = per_layer_overrides(view, kinds).get(i)
    head_dim = (override and override.head_dim) or model_head_dim(view)
    kv_heads = (override and override.num_kv_heads) or num_kv_heads(view)
    h, q_heads, bias = view.int_value("hidden_size"), num_query_heads(view), bool(view.value("attention_bias", False))
    a = p + "self_attn."
    shared = i in kv_share_targets(view, kinds)
    k_eq_v = bool(view.get("attention_k_eq_v")) and LayerKind.FULL in kinds[i]
    return [
        LinearWeight(a + "q_proj", h, q_heads * head_dim, LM, i, "column", bias=bias),
        LinearWeight(a + "o_proj", q_heads * head_dim, h, LM, i, "row", bias=bias),
        DenseWeight(a + "q_norm", head_dim, LM, i),
        LinearWeight(a + "k_proj", h, kv_heads * head_dim, LM, i, "column", bias=bias, kv_heads=kv_heads,
                     allocated_only=shared),
        LinearWeight(a + "v_proj", h, kv_heads * head_dim, LM, i, "column", bias=bias, kv_heads=kv_heads,
                     allocated_only=shared or k_eq_v),
        DenseWeight(a + "k_norm", head_dim, LM, i, allocated_only=shared),
    ]


def _moe(view: ConfigView, i: int, p: str) -> Weights:
    h, experts, size = view.int_value("hidden_size"), view.int_value("num_experts"), view.int_value(
        "moe_intermediate_size")
    return [
        DenseWeight(p + "router.proj", h * experts, LM, i),
        DenseWeight(p + "router.scale", h, LM, i),
        DenseWeight(p + "router.per_expert_scale", experts, LM, i),
        LinearWeight(p + "experts", h, 2 * size, LM, i, "column", experts, role="experts_w13"),
        LinearWeight(p + "experts", size, h, LM, i, "row", experts, role="experts_w2"),
        *norms(p, i, LM, _MOE_NORMS, h),
    ]


def gemma4_layer(view: ConfigView, kinds: Kinds, i: int, p: str) -> Weights:
    h, per_layer_dim = view.int_value("hidden_size"), view.int_value("hidden_size_per_layer_input", 0)
    shared = i in kv_share_targets(view, kinds)
    width = view.int_value("intermediate_size") * (2 if shared and view.get("use_double_wide_mlp") else 1)
    out = _attention(view, kinds, i, p) + gated_mlp(p, i, LM, hidden=h, intermediate=width)
    out += norms(p, i, LM, _FOUR_NORMS, h)
    if view.get("enable_moe_block"):
        out += _moe(view, i, p)
    if per_layer_dim:
        out += [
            LinearWeight(p + "per_layer_input_gate", h, per_layer_dim, LM, i, "replicated"),
            LinearWeight(p + "per_layer_projection", per_layer_dim, h, LM, i, "replicated"),
            DenseWeight(p + "post_per_layer_input_norm", h, LM, i),
        ]
    return out


def gemma4_model_wide(view: ConfigView, kinds: Kinds, prefix: str) -> Weights:
    """The per-layer-input embedding table and its projection (E2B / E4B); [] without them."""
    per_layer_dim = view.int_value("hidden_size_per_layer_input", 0)
    if not per_layer_dim:
        return []
    base, packed = prefix[: -len("layers.")], len(kinds) * per_layer_dim
    rows = view.int_value("vocab_size_per_layer_input")
    return [
        DenseWeight(base + "embed_tokens_per_layer", rows * packed, LM, EMBED_LAYER, "vocab", rows=rows),
        LinearWeight(base + "per_layer_model_projection", view.int_value("hidden_size"), packed, LM, EMBED_LAYER,
                     "replicated"),
        DenseWeight(base + "per_layer_projection_norm", per_layer_dim, LM, EMBED_LAYER),
    ]


def gemma4_rotary(view: ConfigView) -> tuple[DenseWeight, ...]:
    """One cos/sin cache per layer type: max_position_embeddings x rotary_dim elements."""
    rope = view.get("rope_parameters") or {}
    out = []
    for kind in dict.fromkeys(view.get("layer_types") or ()):
        found = rope.get(kind)
        params: dict = found if isinstance(found, dict) else {}
        full = kind != "sliding_attention"
        head_dim = view.int_value("global_head_dim", 0) if full else 0
        head_dim = head_dim or model_head_dim(view)
        proportional = params.get("rope_type") == "proportional"
        factor = 1.0 if proportional else float(params.get("partial_rotary_factor", 1.0))
        rows = view.int_value("max_position_embeddings")
        out.append(DenseWeight(f"rotary_emb.{kind}.cos_sin_cache", rows * int(head_dim * factor), LM))
    return tuple(out)


def gemma4_token_buffers(view: ConfigView, kinds: Kinds) -> tuple[DenseWeight, ...]:
    """The per-layer-input buffer, per scheduled token: layers x hidden_size_per_layer_input."""
    per_layer_dim = view.int_value("hidden_size_per_layer_input", 0)
    if not per_layer_dim:
        return ()
    return (DenseWeight("per_layer_embeddings", len(kinds) * per_layer_dim, LM),)


def gemma4_vision(vc: Mapping[str, Any], cfg: Mapping[str, Any], text_hidden: int) -> Weights:
    h, i, depth = int(vc["hidden_size"]), int(vc["intermediate_size"]), int(vc["num_hidden_layers"])
    heads, kv_heads = int(vc["num_attention_heads"]), int(vc.get("num_key_value_heads", vc["num_attention_heads"]))
    head_dim = int(vc.get("head_dim", h // heads))
    patch = int(vc.get("patch_size", 16))
    p = "model.vision_tower."
    out: Weights = [
        DenseWeight(p + "patch_embedder.input_proj", 3 * patch * patch * h, V),
        DenseWeight(p + "patch_embedder.position_embedding_table", 2 * int(vc.get("position_embedding_size", 0)) * h, V),
    ]
    for b in range(depth):
        q = f"{p}encoder.layers.{b}."
        out += [
            LinearWeight(q + "self_attn.q_proj", h, heads * head_dim, V, 0, "replicated"),
            LinearWeight(q + "self_attn.k_proj", h, kv_heads * head_dim, V, 0, "replicated"),
            LinearWeight(q + "self_attn.v_proj", h, kv_heads * head_dim, V, 0, "replicated"),
            LinearWeight(q + "self_attn.o_proj", heads * head_dim, h, V, 0, "replicated"),
            DenseWeight(q + "self_attn.q_norm", head_dim, V),
            DenseWeight(q + "self_attn.k_norm", head_dim, V),
            *[DenseWeight(q + n, h, V) for n in _FOUR_NORMS],
            LinearWeight(q + "mlp.gate_proj", h, i, V, 0, "replicated"),
            LinearWeight(q + "mlp.up_proj", h, i, V, 0, "replicated"),
            LinearWeight(q + "mlp.down_proj", i, h, V, 0, "replicated"),
        ]
    return [*out, LinearWeight("model.embed_vision.embedding_projection", h, text_hidden, V, 0, "replicated", bias=False)]
