"""Pure state-space models (Mamba2, Mamba, Falcon-Mamba) plan from transformers' default configs
(issue 11): every layer one recurrent state, bytes by hand, vLLM 0.32's state blocks per request.

vLLM 0.32 leaves prefix caching off for attention-free models by default
(ModelConfig.is_prefix_caching_supported: "Attention free models do not support prefix caching"):
mode "none", one state block of max_model_len tokens per request. Enabled by hand, "align" mode
and a Mamba block of --block-size tokens, like the hybrids: a Mamba2 layer keeps 2 live states + 1
prefill checkpoint per request, a Mamba1 layer 2 (MambaMixer2 alone sets
num_prefill_checkpoint_blocks).
Their configs name no max length, so vLLM assumes 2,048 tokens (ModelConfig's default_max_len).
"""

import json

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

transformers = pytest.importorskip("transformers")

# (config class, layers, bytes of one layer's states by hand, vLLM state blocks per request)
#   Mamba2 default: hidden 4096, expand 2 -> 8,192 = 128 heads x 64; 8 groups, state 128, kernel 4:
#     conv (8,192 + 2 x 8 x 128) x 3 x 2 B = 61,440; SSM 128 x 64 x 128 x 2 B = 2,097,152
#   Mamba and Falcon-Mamba defaults: hidden 768, expand 2 -> 1,536 channels, state 16, kernel 4:
#     conv 1,536 x 3 x 2 B = 9,216; SSM 1,536 x 16 x 2 B = 49,152
CASES = [
    ("Mamba2Config", 64, 61_440 + 2_097_152, 3),
    ("MambaConfig", 32, 9_216 + 49_152, 2),
    ("FalconMambaConfig", 32, 9_216 + 49_152, 2),
]


@pytest.mark.parametrize("config_name, num_layers, state_bytes, state_blocks", CASES)
def test_pure_ssm_plans(tmp_path, config_name, num_layers, state_bytes, state_blocks):
    config = getattr(transformers, config_name)()
    config.save_pretrained(tmp_path)
    assert config.num_hidden_layers == num_layers
    spec = load_model_spec(str(tmp_path))
    assert spec.max_model_len == 2048
    assert len(spec.cache_layers) == num_layers and {type(c).__name__ for c in spec.cache_layers} == {"RecurrentDesc"}
    by_default = plan(spec, PlanConfig(gpu="h100")).reports["vllm"].layout
    assert [(g.kind.value, g.num_layers, g.block_size) for g in by_default.groups] == [("recurrent", num_layers, 2048)]
    assert by_default.blocks_per_request(2048) == (1,)
    result = plan(spec, PlanConfig(gpu="h100", enable_prefix_caching=True))
    vllm = result.reports["vllm"].layout
    assert [(g.kind.value, g.num_layers, g.block_size) for g in vllm.groups] == [("recurrent", num_layers, 16)]
    assert vllm.groups[0].spec.state_bytes == state_bytes
    assert vllm.blocks_per_request(2048) == (state_blocks,)
    hkv = result.reports["hkv"].layout
    assert hkv.blocks_per_request(2048) == (1,)  # one live state per request
    assert "vllm-no-hybrid" in result.skipped


def test_pure_ssm_in_both_output_formats(tmp_path):
    from typer.testing import CliRunner

    from hkv.cli.main import app

    transformers.Mamba2Config(num_hidden_layers=4).save_pretrained(tmp_path)
    human = CliRunner().invoke(app, ["plan", str(tmp_path), "--gpu", "h100"])
    assert human.exit_code == 0, human.output
    as_json = CliRunner().invoke(app, ["plan", str(tmp_path), "--gpu", "h100", "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["layouts"]["vllm"]["capacity"]["max_num_requests"] > 0
