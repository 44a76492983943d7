"""The published config.json of checkpoints people deploy (tests/fixtures/real_configs/, sources in its
README.md): every one plans on 8 H100s, and the ones whose layer pattern matters have the layer kinds
and geometry their config states.

Expected values are read by hand from each config file, the field named beside each number; none comes
from hkv.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hkv.cli.main import app
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.layer_desc import AttentionDesc
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

FIXTURES = Path(__file__).parent.parent / "fixtures" / "real_configs"
CONFIGS = sorted(p.stem for p in FIXTURES.glob("*.json") if not p.name.endswith(".hf_quant_config.json"))

# The architectures issue 33 found refused (hkv plan ... --format json must exit 0 for each).
ISSUE_33 = ("MiniMaxAI__MiniMax-M2.7", "nvidia__MiniMax-M2.5-NVFP4", "nvidia__MiniMax-M2.7-NVFP4",
            "moonshotai__Kimi-K2-Instruct", "moonshotai__Kimi-K2.5", "XiaomiMiMo__MiMo-7B-Base",
            "XiaomiMiMo__MiMo-V2-Flash", "nvidia__Llama-3_3-Nemotron-Super-49B-v1",
            "sgl-project__DeepSeek-V4-Flash-FP8", "sgl-project__DeepSeek-V4-Pro-FP8")

# name: {(kind, KV heads, key head size, value head size, window): number of layers}
# MLA layers cache one latent of kv_lora_rank + qk_rope_head_dim (value size 0).
LAYERS: dict[str, dict[tuple[str, int, int, int, int | None], int]] = {
    # attn_type_list: 62 x 1 (softmax); num_key_value_heads 8, head_dim 128
    "MiniMaxAI__MiniMax-M2.7": {("full", 8, 128, 128, None): 62},
    "nvidia__MiniMax-M2.5-NVFP4": {("full", 8, 128, 128, None): 62},
    "nvidia__MiniMax-M2.7-NVFP4": {("full", 8, 128, 128, None): 62},
    # hybrid_layer_pattern: 0 at layers 0, 5, 11, 17, 23, 29, 35, 41, 47 (full: num_key_value_heads 4,
    # head_dim 192, v_head_dim 128), 1 elsewhere (sliding: swa_num_key_value_heads 8, swa_head_dim 192,
    # swa_v_head_dim 128, sliding_window_size 128)
    "XiaomiMiMo__MiMo-V2-Flash": {("full", 4, 192, 128, None): 9, ("sliding", 8, 192, 128, 128): 39},
    # num_hidden_layers 36, num_key_value_heads 8, head_dim 128, use_sliding_window false
    "XiaomiMiMo__MiMo-7B-Base": {("full", 8, 128, 128, None): 36},
    # num_hidden_layers 61, kv_lora_rank 512 + qk_rope_head_dim 64
    "moonshotai__Kimi-K2-Instruct": {("full", 1, 576, 0, None): 61},
    "moonshotai__Kimi-K2.5": {("full", 1, 576, 0, None): 61},  # text_config
    # model_type minimax_m3 / flat minimax_m3_vl: num_key_value_heads 4 x head_dim 128 on all 60 layers,
    # plus an index-key cache (sparse_index_dim 128) on the 57 layers sparse_attention_freq marks 1
    "MiniMaxAI__MiniMax-M3": {("full", 4, 128, 128, None): 60, ("full", 1, 128, 0, None): 57},
    "nvidia__MiniMax-M3-NVFP4": {("full", 4, 128, 128, None): 60, ("full", 1, 128, 0, None): 57},
    # block_configs: attention.no_op false in 49 of 80 blocks, n_heads_in_group 8 of
    # num_attention_heads 64; head size hidden_size 8192 / 64
    "nvidia__Llama-3_3-Nemotron-Super-49B-v1": {("full", 8, 128, 128, None): 49},
}

# The same weights under another model_type: the repack must cache exactly what the original does.
SAME_CACHE_AS = {
    "sgl-project__DeepSeek-V4-Flash-FP8": "deepseek-ai__DeepSeek-V4-Flash",  # compress_ratios identical
    "sgl-project__DeepSeek-V4-Pro-FP8": "deepseek-ai__DeepSeek-V4-Pro",
}


def _spec(name: str):
    return load_model_spec(str(FIXTURES / f"{name}.json"))


@pytest.mark.parametrize("name", CONFIGS)
def test_every_real_config_plans_on_8_h100(name: str) -> None:
    result = plan(_spec(name), PlanConfig(gpu="h100", tp=8))
    assert result.reports, f"{name}: no layout"


@pytest.mark.parametrize("name", CONFIGS)
def test_every_fixture_names_its_source(name: str) -> None:
    config = json.loads((FIXTURES / f"{name}.json").read_text())
    assert config["_source"] and isinstance(config["_verified"], bool)
    assert name in (FIXTURES / "README.md").read_text()


@pytest.mark.parametrize("name", ISSUE_33)
def test_issue_33_configs_plan_through_the_cli(name: str) -> None:
    result = CliRunner().invoke(app, ["plan", str(FIXTURES / f"{name}.json"), "--gpu", "h100", "--tp", "8",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"]["num_hidden_layers"] > 0


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_kinds_match_the_config(name: str) -> None:
    layers = [layer for layer in _spec(name).cache_layers if isinstance(layer, AttentionDesc)]
    counts = Counter((desc.kind.value, desc.num_kv_heads, desc.head_dim, desc.head_dim_v, desc.window_len)
                     for desc in layers)
    assert dict(counts) == LAYERS[name]


@pytest.mark.parametrize("name", sorted(SAME_CACHE_AS))
def test_repack_caches_what_the_original_does(name: str) -> None:
    repack, original = _spec(name), _spec(SAME_CACHE_AS[name])
    assert repack.family == original.family == "deepseek_v4"
    assert repack.cache_layers == original.cache_layers
    assert repack.draft_layers == original.draft_layers


def test_nemotron_nas_reads_every_block() -> None:
    """Llama-3.3-Nemotron-Super-49B: the no-op attention blocks own no cache; the MLP widths follow
    vLLM's int(2 x ffn_mult x hidden / 3) rounded up to 256 (ffn_mult 5.25 -> 28,672, the largest);
    KV heads of the first attention block (vLLM's NemotronNasModelArchConfigConvertor)."""
    spec = _spec("nvidia__Llama-3_3-Nemotron-Super-49B-v1")
    config = json.loads((FIXTURES / "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json").read_text())
    with_attention = [i for i, block in enumerate(config["block_configs"]) if not block["attention"]["no_op"]]
    assert [layer.layer_idx for layer in spec.cache_layers] == with_attention
    assert spec.intermediate_size == 28672
    assert 49.0e9 < spec.num_params < 50.5e9  # the checkpoint's name: 49B


def test_mimo_7b_drafts_with_its_mtp_layer() -> None:
    """num_nextn_predict_layers 1: vLLM's MiMoMTP drafter caches one more full-attention layer."""
    assert len(_spec("XiaomiMiMo__MiMo-7B-Base").draft_layers) == 1


def _lightning_layer(config: dict) -> None:
    config["attn_type_list"][5] = 0


def _linear_attention(config: dict) -> None:
    config["block_configs"][3]["attention"]["replace_with_linear"] = True


@pytest.mark.parametrize(("name", "change", "phrase"), [
    # vLLM's MiniMaxM2 has softmax attention only: a lightning (0) layer has no module there
    ("MiniMaxAI__MiniMax-M2.7", _lightning_layer, "attn_type_list[5] = 0"),
    # vLLM's DeciLM never builds replace_with_linear's linear layer
    ("nvidia__Llama-3_3-Nemotron-Super-49B-v1", _linear_attention,
     "block_configs[3].attention.replace_with_linear"),
])
def test_what_the_engine_cannot_build_is_refused_in_one_line(name: str, change, phrase: str) -> None:
    config = json.loads((FIXTURES / f"{name}.json").read_text())
    change(config)
    with pytest.raises(InvalidConfigError) as refusal:
        from_hf_config(config, name)
    assert phrase in str(refusal.value) and "\n" not in str(refusal.value)
