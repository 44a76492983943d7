"""Every family issue 11 names, from transformers' own default config saved to a directory, through
`hkv plan` in both formats: it plans, or it is refused with what the model is.

The expected layer mix is read from the transformers config object itself (its layer_types, or
its layer count for pure state-space models), not from hkv.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from hkv.cli.main import app

transformers = pytest.importorskip("transformers")
runner = CliRunner()

# transformers' layer-type name -> hkv's layer-mix keys, per family (the recurrent mixer's name).
_MIXER = {"qwen3_5": "gdn", "qwen3_5_moe": "gdn", "zamba2": "mamba2", "bailing_hybrid": "kda", "lfm2": "short_conv",
          "lfm3": "short_conv"}
_SSM_ONLY = {"mamba2": "mamba2", "mamba": "mamba1", "falcon_mamba": "mamba1"}
# Keys the default config leaves unusable for the whole model (LFM2-MoE's layer_types is None).
_REFUSED = {
    "zamba": "vLLM does not serve Zamba v1",
    "inkling2": "'hybrid_sliding' is inkling2's sliding-window layer",
    "lfm2_moe": "'lfm2_moe' needs layer_types",
}
_PLANNED = ["qwen3_5", "qwen3_5_moe", "mamba2", "mamba", "falcon_mamba", "zamba2", "bailing_hybrid", "lfm2", "lfm3",
            "glm4_moe_lite", "gemma4"]


def _expected_mix(model_type: str, config) -> dict[str, int]:
    text = config.get_text_config()
    if model_type in _SSM_ONLY:
        return {_SSM_ONLY[model_type]: text.num_hidden_layers}
    if model_type == "glm4_moe_lite":
        return {"full": text.num_hidden_layers}  # MLA in every layer
    names = {"full_attention": ("full",), "sliding_attention": ("sliding",), "linear_attention": (_MIXER.get(
        model_type),), "conv": ("short_conv",), "hybrid": ("full", "mamba2")}
    mix: Counter[str] = Counter()
    for name in getattr(text, "layer_types", None) or text.layers_block_type:
        mix.update(names[name])
    return dict(mix)


def _save_default(tmp_path, model_type: str):
    config = transformers.AutoConfig.for_model(model_type)
    config.save_pretrained(tmp_path)
    return config


@pytest.mark.parametrize("model_type", _PLANNED)
def test_default_config_plans_in_both_formats(tmp_path, model_type: str) -> None:
    config = _save_default(tmp_path, model_type)
    as_json = runner.invoke(app, ["plan", str(tmp_path), "--gpu", "h200", "--format", "json"])
    assert as_json.exit_code == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["model"]["layer_mix"] == _expected_mix(model_type, config)
    assert doc["layouts"]["vllm"]["capacity"]["max_concurrency"] > 0
    as_table = runner.invoke(app, ["plan", str(tmp_path), "--gpu", "h200"], env={"COLUMNS": "200"})
    assert as_table.exit_code == 0, as_table.stderr
    assert "vllm log: GPU KV cache size:" in as_table.stdout


@pytest.mark.parametrize("model_type", sorted(_REFUSED))
def test_default_config_refused_with_the_reason(tmp_path, model_type: str) -> None:
    _save_default(tmp_path, model_type)
    for fmt in ("json", "human"):
        result = runner.invoke(app, ["plan", str(tmp_path), "--gpu", "h200", "--format", fmt])
        assert result.exit_code != 0 and result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and _REFUSED[model_type] in lines[0]
