"""Every causal-LM family transformers knows: hkv plans it from the family's default config, or
refuses it with the reason this table states. A transformers release that adds a family fails
`test_the_table_covers_every_family` until the table says what hkv does with it.

`served` is whether vLLM 0.32's model registry lists the family's architecture class (read from
vLLM's own registry, `_VLLM_MODELS` and `_TRANSFORMERS_BACKEND_MODELS`, in .venv-vllm). Every
served family plans, except lfm2_moe: its default config has no `layer_types`, which both its own
transformers model (TypeError) and vLLM's Lfm2MoeForCausalLM index per layer.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

transformers = pytest.importorskip("transformers")
from transformers import AutoConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

PLANS = "plans"
NO_DEFAULT_CONFIG = "transformers cannot build its default config"

# model_type: (served by vLLM 0.32, PLANS or a phrase of the one-line refusal)
FAMILIES: dict[str, tuple[bool, str]] = {
    'afmoe': (True, PLANS),
    'apertus': (True, PLANS),
    'apertus1p5_text': (False, PLANS),
    'arcee': (True, PLANS),
    'aria_text': (False, PLANS),
    'axk1': (True, PLANS),
    'axk2': (False, 'does not model yet'),
    'bailing_hybrid': (False, PLANS),
    'bamba': (False, PLANS),
    'bart': (False, 'an encoder-decoder model'),
    'beam': (False, PLANS),
    'bert': (False, PLANS),
    'bert-generation': (False, 'not a causal language model'),
    'big_bird': (False, PLANS),
    'bigbird_pegasus': (False, 'an encoder-decoder model'),
    'biogpt': (False, PLANS),
    'bitnet': (False, PLANS),
    'blenderbot': (False, 'an encoder-decoder model'),
    'blenderbot-small': (False, 'an encoder-decoder model'),
    'bloom': (True, PLANS),
    'blt': (False, 'has no rule and its config lacks'),
    'camembert': (False, PLANS),
    'codegen': (False, 'has no rule and its config lacks'),
    'cohere': (True, PLANS),
    'cohere2': (True, PLANS),
    'cohere2_moe': (True, PLANS),
    'cohere_compass_text': (False, PLANS),
    'cpmant': (False, "lacks 'intermediate_size'"),
    'ctrl': (False, 'has no rule and its config lacks'),
    'cwm': (True, PLANS),
    'data2vec-text': (False, PLANS),
    'dbrx': (True, PLANS),
    'deepseek_v2': (True, PLANS),
    'deepseek_v3': (True, PLANS),
    'deepseek_v32': (True, PLANS),
    'deepseek_v4': (True, PLANS),
    'diffllama': (False, PLANS),
    'doge': (False, PLANS),
    'dory': (False, PLANS),
    'dots1': (False, PLANS),
    'dots3_note': (True, PLANS),
    'dots3_note_text': (True, PLANS),
    'electra': (False, PLANS),
    'emu3': (False, PLANS),
    'ernie': (False, PLANS),
    'ernie4_5': (True, PLANS),
    'ernie4_5_moe': (True, PLANS),
    'exaone': (True, PLANS),
    'exaone4': (True, PLANS),
    'exaone_moe': (True, PLANS),
    'falcon': (True, PLANS),
    'falcon_h1': (True, PLANS),
    'falcon_mamba': (True, PLANS),
    'flex_olmo': (True, PLANS),
    'flint': (False, PLANS),
    'fuyu': (False, PLANS),
    'gemma': (True, PLANS),
    'gemma2': (True, PLANS),
    'gemma3': (True, PLANS),
    'gemma3_text': (True, PLANS),
    'gemma3n': (True, PLANS),
    'gemma3n_text': (True, PLANS),
    'gemma4': (True, PLANS),
    'gemma4_assistant': (False, NO_DEFAULT_CONFIG),
    'gemma4_text': (True, PLANS),
    'gemma4_unified': (True, PLANS),
    'gemma4_unified_assistant': (False, PLANS),
    'gemma4_unified_text': (False, PLANS),
    'git': (False, PLANS),
    'glm': (True, PLANS),
    'glm4': (True, PLANS),
    'glm4_moe': (True, PLANS),
    'glm4_moe_lite': (True, PLANS),
    'glm_moe_dsa': (True, PLANS),
    'got_ocr2': (False, PLANS),
    'gpt-sw3': (True, PLANS),
    'gpt2': (True, PLANS),
    'gpt_bigcode': (True, PLANS),
    'gpt_neo': (False, 'has no rule and its config lacks'),
    'gpt_neox': (True, PLANS),
    'gpt_neox_japanese': (False, "lacks 'intermediate_size'"),
    'gpt_oss': (True, PLANS),
    'gptj': (True, PLANS),
    'granite': (True, PLANS),
    'granite_swa': (True, PLANS),
    'granitemoe': (True, PLANS),
    'granitemoe_swa': (True, PLANS),
    'granitemoehybrid': (True, PLANS),
    'granitemoeshared': (True, PLANS),
    'helium': (False, PLANS),
    'hrm_text': (True, PLANS),
    'hunyuan_v1_dense': (True, PLANS),
    'hunyuan_v1_moe': (True, PLANS),
    'hy_v3': (True, PLANS),
    'hy_v4': (True, PLANS),
    'hyperclovax': (True, PLANS),
    'inkling2_loop_text': (False, 'no vLLM release serves'),
    'inkling2_text': (False, 'no vLLM release serves'),
    'inkling_text': (True, PLANS),
    'internlm3': (True, PLANS),
    'iquestcoder': (True, PLANS),
    'jais2': (True, PLANS),
    'jamba': (True, PLANS),
    'jetmoe': (False, PLANS),
    'kimi_linear': (True, PLANS),
    'kolibri1': (False, "lacks 'intermediate_size'"),
    'laguna': (True, PLANS),
    'lara_mini': (False, PLANS),
    'lfm2': (True, PLANS),
    'lfm2_moe': (True, 'needs layer_types'),
    'lfm3': (False, PLANS),
    'llama': (True, PLANS),
    'llama4': (True, PLANS),
    'llama4_text': (True, PLANS),
    'longcat_flash': (True, PLANS),
    'mamba': (True, PLANS),
    'mamba2': (True, PLANS),
    'marian': (False, 'an encoder-decoder model'),
    'mbart': (False, 'an encoder-decoder model'),
    'megatron-bert': (False, PLANS),
    'mellum': (True, PLANS),
    'mimo_v2_flash': (True, PLANS),
    'minicpm3': (True, PLANS),
    'minimax': (False, PLANS),
    'minimax_m2': (True, PLANS),
    'minimax_m3_vl_text': (False, PLANS),
    'ministral': (False, PLANS),
    'ministral3': (True, PLANS),
    'mistral': (True, PLANS),
    'mixtral': (True, PLANS),
    'mllama': (False, PLANS),
    'modernbert-decoder': (False, PLANS),
    'moshi': (False, 'has no layer rule and sets'),
    'moss_transcribe_diarize': (True, PLANS),
    'mpt': (False, PLANS),
    'musicgen': (False, 'an encoder-decoder model'),
    'musicgen_melody': (False, 'an encoder-decoder model'),
    'mvp': (False, 'an encoder-decoder model'),
    'nanochat': (False, PLANS),
    'nemotron': (True, PLANS),
    'nemotron_h': (True, PLANS),
    'olmo': (True, PLANS),
    'olmo2': (True, PLANS),
    'olmo3': (True, PLANS),
    'olmo_hybrid': (True, PLANS),
    'olmoe': (True, PLANS),
    'openai-gpt': (False, 'has no rule and its config lacks'),
    'opt': (True, PLANS),
    'pegasus': (False, 'an encoder-decoder model'),
    'persimmon': (False, PLANS),
    'phi': (True, PLANS),
    'phi3': (True, PLANS),
    'phi4_multimodal': (False, PLANS),
    'phimoe': (False, PLANS),
    'plbart': (False, 'an encoder-decoder model'),
    'prophetnet': (False, 'an encoder-decoder model'),
    'qwen2': (True, PLANS),
    'qwen2_moe': (True, PLANS),
    'qwen3': (True, PLANS),
    'qwen3_5': (True, PLANS),
    'qwen3_5_moe': (True, PLANS),
    'qwen3_5_moe_text': (True, PLANS),
    'qwen3_5_text': (True, PLANS),
    'qwen3_moe': (True, PLANS),
    'qwen3_next': (True, PLANS),
    'qwen4_exp': (True, PLANS),
    'qwen4_exp_text': (True, PLANS),
    'recurrent_gemma': (False, "lacks 'max_position_embeddings'"),
    'reformer': (False, 'not a causal language model'),
    'rembert': (False, PLANS),
    'roberta': (False, PLANS),
    'roberta-prelayernorm': (False, PLANS),
    'roc_bert': (False, PLANS),
    'roformer': (False, PLANS),
    'rwkv': (False, 'has no rule and its config lacks'),
    'sarvam_mla': (True, PLANS),
    'sarvam_moe': (True, PLANS),
    'seed_oss': (True, PLANS),
    'smollm3': (True, PLANS),
    'solar_open': (False, "lacks 'intermediate_size'"),
    'stablelm': (True, PLANS),
    'starcoder2': (True, PLANS),
    'trocr': (False, 'has no rule and its config lacks'),
    'vaultgemma': (True, PLANS),
    'whisper': (False, 'an encoder-decoder model'),
    'xglm': (False, 'has no rule and its config lacks'),
    'xlm': (False, 'has no rule and its config lacks'),
    'xlm-roberta': (False, PLANS),
    'xlm-roberta-xl': (False, PLANS),
    'xlnet': (False, 'has no rule and its config lacks'),
    'xlstm': (False, 'has no rule and its config lacks'),
    'xmod': (False, PLANS),
    'youtu': (False, 'has no layer rule and sets'),
    'zamba': (False, 'vLLM does not serve Zamba v1'),
    'zamba2': (True, PLANS),
    'zaya': (False, 'needs a recurrent mixer'),
}

# Served families that do not plan, and why (the table above says how they are refused).
SERVED_BUT_REFUSED = {"lfm2_moe": "default config without layer_types: its own transformers model fails too"}


def save_default_config(model_type: str, folder: Path | str) -> None:
    """The family's default config.json, with its causal-LM architecture, in `folder`; raises
    whatever transformers raises when it cannot build the config."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(model_type)
        config.architectures = [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type]]
        config.save_pretrained(folder)


def test_the_table_covers_every_family() -> None:
    known = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    assert known - set(FAMILIES) == set(), "new transformers families: say in FAMILIES what hkv does with them"
    assert set(FAMILIES) - known == set(), "families transformers no longer has: drop them from FAMILIES"


def test_every_family_vllm_serves_plans_unless_listed() -> None:
    refused = {name for name, (served, outcome) in FAMILIES.items() if served and outcome != PLANS}
    assert refused == set(SERVED_BUT_REFUSED)
    assert sum(served for served, _ in FAMILIES.values()) == 109


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_family_plans_or_is_refused_for_its_reason(model_type: str, tmp_path) -> None:
    _, outcome = FAMILIES[model_type]
    try:
        save_default_config(model_type, tmp_path)
    except Exception:  # noqa: BLE001 - any failure of transformers itself
        assert outcome == NO_DEFAULT_CONFIG, f"{model_type}: transformers could not build its default config"
        return
    assert outcome != NO_DEFAULT_CONFIG, f"{model_type}: transformers now builds its default config"
    if outcome == PLANS:
        result = plan(load_model_spec(str(tmp_path)), PlanConfig(gpu="h100"))
        assert result.reports, f"{model_type}: no layout"
        return
    with pytest.raises(Exception) as refusal:
        plan(load_model_spec(str(tmp_path)), PlanConfig(gpu="h100"))
    assert type(refusal.value).__module__.startswith("hkv."), f"{model_type}: not a refusal: {refusal.value!r}"
    message = str(refusal.value)
    assert outcome in message and "\n" not in message
