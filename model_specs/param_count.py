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

from hkv.model_specs import param_count_attention as attn
from hkv.model_specs import param_count_classic as classic
from hkv.model_specs import param_count_hybrid as hybrid
from hkv.model_specs import param_count_lfm as lfm
from hkv.model_specs import param_count_ssm as ssm
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.domyn_edge_layers import DOMYN_EDGE_FAMILIES
from hkv.model_specs.param_count_alice_ai import alice_ai
from hkv.model_specs.param_count_beam import beam
from hkv.model_specs.param_count_common import Kinds
from hkv.model_specs.param_count_compressed import deepseek_v4
from hkv.model_specs.param_count_domyn_edge import domyn_edge
from hkv.model_specs.param_count_dory import dory
from hkv.model_specs.param_count_dots3 import dots3
from hkv.model_specs.param_count_dsa import dsa
from hkv.model_specs.param_count_flint import flint
from hkv.model_specs.param_count_gemma3n import gemma3n
from hkv.model_specs.param_count_gemma4 import gemma4
from hkv.model_specs.param_count_inkling import inkling
from hkv.model_specs.param_count_mimo_v2 import mimo_v2
from hkv.model_specs.param_count_minimax_m2 import minimax_m2
from hkv.model_specs.param_count_minimax_m3 import minimax_m3
from hkv.model_specs.param_count_muse_spark import muse_spark
from hkv.model_specs.param_count_nemotron_nas import nemotron_nas
from hkv.model_specs.step3p7_model import STEP3P7_FAMILIES, step3p7

ParamCounter = Callable[[ConfigView, Kinds], int]

PARAM_COUNTERS: dict[str, ParamCounter] = {
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
    "deepseek_v4": deepseek_v4,  # compressed attention + mHC (param_count_compressed.py)
    "deepseek_v32": dsa,  # DeepSeek-V3's decoder + the DSA lightning indexers
    "glm_moe_dsa": dsa,
    "sarvam_mla": attn.deepseek_v3,  # transformers builds it as DeepseekV3ForCausalLM
    "axk1": attn.axk1,
    "minicpm3": attn.minicpm3,
    "olmo_hybrid": hybrid.olmo_hybrid,
    "qwen4_exp_text": hybrid.qwen4_exp,
    "lara_mini": hybrid.lara_mini,
    "gemma3n_text": gemma3n,
    "gemma4_text": gemma4,
    "bamba": hybrid.bamba,
    "granitemoehybrid": hybrid.granitemoehybrid,
    "falcon_h1": hybrid.falcon_h1,
    "nemotron_h": hybrid.nemotron_h,
    "nemotron-nas": nemotron_nas,  # attention / MLP per block_configs (param_count_nemotron_nas.py)
    "jamba": hybrid.jamba,
    "qwen3_next": hybrid.qwen3_next,
    "qwen3_5_text": hybrid.qwen3_next,  # the same decoder: gated delta net + gated attention
    "qwen3_5_moe_text": hybrid.qwen3_next,
    "minimax": hybrid.minimax,
    "minimax_m3_text": minimax_m3,  # GQA + MiniMax-M3 indexers, dense/MoE MLPs (param_count_minimax_m3.py)
    "minimax_m3_vl_text": minimax_m3,
    "minimax_m2": minimax_m2,  # GQA + per-layer q/k norms, MoE on every layer (param_count_minimax_m2.py)
    "mimo_v2_flash": mimo_v2,  # sliding / full geometry, SWA sinks, MoE per moe_layer_freq (param_count_mimo_v2.py)
    **{family: step3p7 for family in STEP3P7_FAMILIES},  # 64/96-head GQA + g_proj, MoE + shared expert (step3p7_model.py)
    "kimi_linear": hybrid.kimi_linear,
    "beam": beam,  # gated GQA + MoE / dense per mlp_layer_types (param_count_beam.py)
    "flint": flint,  # GQA + sinks, MoE + shared expert unless mlp_only_layers (param_count_flint.py)
    **{family: domyn_edge for family in DOMYN_EDGE_FAMILIES},  # head size per layer (param_count_domyn_edge.py)
    "dory": dory,  # one attention or MLP sublayer per layer, nGPT scales (param_count_dory.py)
    "alice_ai": alice_ai,  # KDA / gated full attention, MoE + shared expert, AttnRes (param_count_alice_ai.py)
    **{family: dots3 for family in ("dots3_note", "dots3_note_text")},  # DSA + sliding MLA (param_count_dots3.py)
    **{family: muse_spark for family in ("muse_spark", "muse_spark_text")},  # pooled MoE (param_count_muse_spark.py)
    "mamba2": ssm.mamba2,
    "mamba": ssm.mamba1,
    "falcon_mamba": ssm.mamba1,
    "lfm2": lfm.lfm2,
    "lfm2_moe": lfm.lfm2_moe,
    "inkling_text": inkling,  # routed + shared experts, r_proj, short convs (param_count_inkling.py)
    **classic.COUNTERS,  # GPT-2, GPT-J, BLOOM, Falcon, OPT, MPT, StarCoder2, DBRX, LongCat-Flash
}


def count_params(view: ConfigView, kinds: Kinds) -> int:
    counter = PARAM_COUNTERS.get(view.family)
    if counter is None:
        view.note(f"num_params of model_type {view.family!r} is a Llama-shaped estimate "
                  "(attention + gated MLP per layer), not an exact count")
        counter = attn.llama
    mtp_layers = view.get("num_nextn_predict_layers") or 0
    if mtp_layers:
        view.note(f"num_params excludes {mtp_layers} multi-token-prediction layer(s) "
                  "(transformers does not build them)")
    return counter(view, kinds)
