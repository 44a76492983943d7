"""Parameter count of dots3 (model_type dots3_note / dots3_note_text) from vLLM 0.33's model code
(vllm/models/dots3_note/nvidia/model.py), equal to transformers 5.24's Dots3NoteForCausalLM.

Per layer, by layer_types:
- "indexed_attention" (Dots3NoteFullAttention, l.242-330): DeepSeek-V2 MLA with q_lora_rank
  (fused q_a | kv_a, q_a_layernorm, q_b, kv_a_layernorm, kv_b, o), the DSA lightning indexer
  (param_count_dsa.indexer_params), g_proj and k_rope_only_layernorm (qk_rope_head_dim);
- "sliding_attention" (Dots3NoteSlidingAttention, l.352-430): the same MLA, g_proj and
  k_rope_only_layernorm at the sliding geometry, no indexer;
- g_proj: hidden -> heads when attention_gate_type (swa_attention_gate_type) is "headwise", else
  hidden -> heads x v_head_dim (l.309-320, l.414-421); transformers' only form is headwise, taken
  when the config names none;
- MLP (l.536-563): a routed MoE (router n_routed_experts x hidden, experts x 3 x hidden x
  moe_intermediate_size, shared expert of moe_intermediate_size x n_shared_experts, Dots3NoteMoE
  l.99-135) or a dense gated MLP of intermediate_size; two hidden-sized RMSNorms.
The sliding geometry: vLLM's checkpoint keys swa_* (swa_num_attention_heads, swa_q_lora_rank,
swa_kv_lora_rank, swa_qk_nope_head_dim, swa_qk_rope_head_dim, swa_v_head_dim), else transformers'
per_layer_config overrides of the layer, else the model-wide value. Counted as the checkpoint stores
it: vLLM's block padding of the MLP widths (_padded_mlp_size, fp8 block quantization) is not.
"""

from __future__ import annotations

from collections.abc import Mapping

from hkv.model_specs import param_blocks as pb
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.layer_kinds import LayerKind
from hkv.model_specs.param_count_common import Kinds, decoder_total, dense_mlp, has_kind, hidden, norms
from hkv.model_specs.param_count_dsa import indexer_params

_MLA_KEYS = ("num_attention_heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
             "v_head_dim", "attention_gate_type")


def _overrides(view: ConfigView) -> dict[int, Mapping]:
    """transformers' per_layer_config, keyed by layer index (its keys are zero-padded strings)."""
    per_layer = view.get("per_layer_config")
    if not isinstance(per_layer, Mapping):
        return {}
    return {int(key): entry for key, entry in per_layer.items() if isinstance(entry, Mapping)}


def _layer_value(view: ConfigView, override: Mapping, key: str, sliding: bool) -> int | str:
    """swa_<key> on sliding layers, else the layer's per_layer_config override, else the model-wide key;
    the gate type is each kind's own key (vLLM reads swa_attention_gate_type on sliding layers)."""
    if key == "attention_gate_type":
        name = f"swa_{key}" if sliding else key
        return view.value(name, "headwise", why="transformers' Dots3NoteTextAttention builds a headwise g_proj")
    if sliding and view.has(f"swa_{key}"):
        return view.get(f"swa_{key}")
    if override.get(key) is not None:
        return override[key]
    return view.int_value(key)


def _attention(view: ConfigView, override: Mapping, sliding: bool) -> int:
    dims = {key: _layer_value(view, override, key, sliding) for key in _MLA_KEYS}
    heads, rope, v_dim = int(dims["num_attention_heads"]), int(dims["qk_rope_head_dim"]), int(dims["v_head_dim"])
    mla = pb.mla_attention(hidden(view), heads, q_lora_rank=int(dims["q_lora_rank"]),
                           kv_lora_rank=int(dims["kv_lora_rank"]), qk_nope_dim=int(dims["qk_nope_head_dim"]),
                           qk_rope_dim=rope, v_head_dim=v_dim)
    gate = pb.linear(hidden(view), heads if dims["attention_gate_type"] == "headwise" else heads * v_dim)
    return mla + gate + rope


def _moe_layers(view: ConfigView, n: int) -> set[int]:
    """vLLM's rule (first_k_dense_replace, moe_layer_freq) where the config has it, else transformers'
    mlp_layer_types, else Dots3NoteTextConfig's default (layer 0 dense)."""
    if view.has("first_k_dense_replace"):
        first, freq = view.int_value("first_k_dense_replace"), view.int_value("moe_layer_freq", 1)
        return {i for i in range(n) if i >= first and i % freq == 0}
    types = view.get("mlp_layer_types")
    if isinstance(types, list) and len(types) == n:
        return {i for i, kind in enumerate(types) if kind == "sparse"}
    return set(range(1, n))


def dots3(view: ConfigView, kinds: Kinds) -> int:
    h, experts, size = hidden(view), view.int_value("n_routed_experts"), view.int_value("moe_intermediate_size")
    shared = size * view.int_value("n_shared_experts")
    moe = pb.linear(h, experts) + pb.routed_experts(experts, h, size) + pb.gated_mlp(h, shared)
    if view.int_value("shared_experts_intermediate_size", size) != size:
        view.note("shared_experts_intermediate_size differs from moe_intermediate_size: the shared expert counted "
                  "as vLLM 0.33 builds it, moe_intermediate_size x n_shared_experts (Dots3NoteMoE)")
    moe_layers, overrides = _moe_layers(view, len(kinds)), _overrides(view)
    per_layer = [_attention(view, overrides.get(idx, {}), has_kind(layer, LayerKind.SLIDING))
                 + (indexer_params(view) if has_kind(layer, LayerKind.INDEXER) else 0)
                 + (moe if idx in moe_layers else dense_mlp(view)) + norms(view, 2)
                 for idx, layer in enumerate(kinds)]
    return decoder_total(view, per_layer)
