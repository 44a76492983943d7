"""Analytic parameter count of the language model, dispatched on the family.

Contract: for every family in PARAM_COUNTERS the count equals transformers'
`sum(p.numel() for p in AutoModelForCausalLM.from_config(cfg).parameters())` (tied weights counted
once); tests/runtime/test_param_count.py checks this on tiny configs. Not counted: vision/audio
towers of multimodal wrappers, and multi-token-prediction layers (`num_nextn_predict_layers`),
which transformers does not build. Families transformers lacks or lays out otherwise (AliceAI,
DomynEdge, Dory) count the weights of vLLM 0.33's modules instead, worked by hand in their tests.
Other families get a Llama-shaped estimate and a note.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from hkv.model_specs import param_count_attention as attn
from hkv.model_specs import param_count_classic as classic
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.family_sets import DOMYN_EDGE_FAMILIES, STEP3P7_FAMILIES
from hkv.model_specs.lazy_import import resolve
from hkv.model_specs.param_count_common import Kinds

ParamCounter = Callable[[ConfigView, Kinds], int]

_M = "hkv.model_specs."
# A counter, or the "module:function" of one whose module loads only when planned (lazy_import.py).
PARAM_COUNTERS: dict[str, ParamCounter | str] = {
    "llama": attn.llama,
    "mistral": attn.mistral,
    "qwen3": attn.qwen3,
    "qwen3_moe": attn.qwen3_moe,
    "qwen2": attn.qwen2,
    "qwen2_moe": attn.qwen2_moe,
    "gemma2": attn.gemma2,
    "gemma3_text": attn.gemma3,
    "cohere2": attn.cohere2,
    "gpt_oss": attn.gpt_oss,
    "llama4_text": attn.llama4,
    "deepseek_v3": attn.deepseek_v3,
    "deepseek_v2": attn.deepseek_v3,  # same MLA + first-k-dense MoE layout
    "glm4_moe": attn.glm4_moe,
    "glm4_moe_lite": attn.deepseek_v3,  # DeepSeek-V3's MLA + first-k-dense MoE decoder
    "deepseek_v4": _M + "param_count_compressed:deepseek_v4",  # compressed attention + mHC
    "deepseek_v32": _M + "param_count_dsa:dsa",  # DeepSeek-V3's decoder + the DSA lightning indexers
    "glm_moe_dsa": _M + "param_count_dsa:dsa",
    "sarvam_mla": attn.deepseek_v3,  # transformers builds it as DeepseekV3ForCausalLM
    "axk1": attn.axk1,
    "minicpm3": attn.minicpm3,
    "olmo_hybrid": _M + "param_count_hybrid:olmo_hybrid",
    "qwen4_exp_text": _M + "param_count_hybrid:qwen4_exp",
    "lara_mini": _M + "param_count_hybrid:lara_mini",
    "gemma3n_text": _M + "param_count_gemma3n:gemma3n",
    "gemma4_text": _M + "param_count_gemma4:gemma4",
    "bamba": _M + "param_count_hybrid:bamba",
    "granitemoehybrid": _M + "param_count_hybrid:granitemoehybrid",
    "falcon_h1": _M + "param_count_hybrid:falcon_h1",
    "nemotron_h": _M + "param_count_hybrid:nemotron_h",
    "nemotron-nas": _M + "param_count_nemotron_nas:nemotron_nas",  # attention / MLP per block_configs
    "jamba": _M + "param_count_hybrid:jamba",
    "qwen3_next": _M + "param_count_hybrid:qwen3_next",
    # the same decoder: gated delta net + gated attention
    "qwen3_5_text": _M + "param_count_hybrid:qwen3_next",
    "qwen3_5_moe_text": _M + "param_count_hybrid:qwen3_next",
    "minimax": _M + "param_count_hybrid:minimax",
    "minimax_m3_text": _M + "param_count_minimax_m3:minimax_m3",  # GQA + MiniMax-M3 indexers, dense/MoE MLPs
    "minimax_m3_vl_text": _M + "param_count_minimax_m3:minimax_m3",
    "minimax_m2": _M + "param_count_minimax_m2:minimax_m2",  # GQA + per-layer q/k norms, MoE on every layer
    # sliding / full geometry, SWA sinks, MoE per moe_layer_freq
    "mimo_v2_flash": _M + "param_count_mimo_v2:mimo_v2",
    # 64/96-head GQA + g_proj, MoE + shared expert
    **{family: _M + "step3p7_model:step3p7" for family in STEP3P7_FAMILIES},
    "kimi_linear": _M + "param_count_hybrid:kimi_linear",
    "beam": _M + "param_count_beam:beam",  # gated GQA + MoE / dense per mlp_layer_types
    "flint": _M + "param_count_flint:flint",  # GQA + sinks, MoE + shared expert unless mlp_only_layers
    # head size per layer
    **{family: _M + "param_count_domyn_edge:domyn_edge" for family in DOMYN_EDGE_FAMILIES},
    "dory": _M + "param_count_dory:dory",  # one attention or MLP sublayer per layer, nGPT scales
    # KDA / gated full attention, MoE + shared expert, AttnRes
    "alice_ai": _M + "param_count_alice_ai:alice_ai",
    # DSA + sliding MLA
    **{family: _M + "param_count_dots3:dots3" for family in ("dots3_note", "dots3_note_text")},
    # pooled MoE
    **{family: _M + "param_count_muse_spark:muse_spark" for family in ("muse_spark", "muse_spark_text")},
    "mamba2": _M + "param_count_ssm:mamba2",
    "mamba": _M + "param_count_ssm:mamba1",
    "falcon_mamba": _M + "param_count_ssm:mamba1",
    "lfm2": _M + "param_count_lfm:lfm2",
    "lfm2_moe": _M + "param_count_lfm:lfm2_moe",
    "inkling_text": _M + "param_count_inkling:inkling",  # routed + shared experts, r_proj, short convs
    **classic.COUNTERS,  # GPT-2, GPT-J, BLOOM, Falcon, OPT, MPT, StarCoder2, DBRX, LongCat-Flash
}


def count_params(view: ConfigView, kinds: Kinds) -> int:
    counter = PARAM_COUNTERS.get(view.family)
    if counter is None:
        view.note(f"num_params of model_type {view.family!r} is a Llama-shaped estimate "
                  "(attention + gated MLP per layer), not an exact count")
        counter = attn.llama
    elif isinstance(counter, str):
        counter = cast(ParamCounter, resolve(counter))
    mtp_layers = view.get("num_nextn_predict_layers") or 0
    if mtp_layers:
        view.note(f"num_params excludes {mtp_layers} multi-token-prediction layer(s) "
                  "(transformers does not build them)")
    return counter(view, kinds)
