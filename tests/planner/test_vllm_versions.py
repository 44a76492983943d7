"""`--vllm-version`: each rule switches at the release where vLLM's code changed (see
planner/engines/vllm/rules.py), checked on small models with hand-derived numbers."""

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.vllm.rules import VllmRules, parse_vllm_version
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

GIB = 2**30


@pytest.mark.parametrize("text, parsed", [("0.24.0", (0, 24, 0)), ("0.24", (0, 24, 0)), ("v0.20.2", (0, 20, 2)),
                                          ("0.11.1.post2", (0, 11, 1)), ("0.10.1.1", (0, 10, 1))])
def test_versions_parse(text, parsed):
    assert parse_vllm_version(text) == parsed


@pytest.mark.parametrize("text, fragment", [("0.9.2", "outside the releases hkv models (0.10.0 to 0.33.0)"),
                                            ("0.34.0", "outside the releases"), ("latest", "is not a version number")])
def test_bad_versions_are_refused_with_the_range(text, fragment):
    with pytest.raises(InvalidInputError, match="vllm_version") as err:
        PlanConfig(vllm_version=text)
    assert fragment in str(err.value)


def test_vllm_log_and_vllm_version_are_not_both_given():
    with pytest.raises(InvalidInputError, match="pass one of them"):
        PlanConfig(vllm_log="legacy", vllm_version="0.24.0")


@pytest.mark.parametrize("version, counts, expected", [
    ("0.11.2", [18, 19], 18),  # plain min
    ("0.12.0", [18, 19], 19),  # 19 < 1.25 x 18 = 22.5
    ("0.12.0", [10, 14], 10),  # 14 >= 12.5
    ("0.18.0", [10, 14], 14),  # 14 < 15
    ("0.32.0", [10, 20], 10),  # 20 >= 15
])
def test_group_size_rule_per_release(version, counts, expected):
    assert VllmRules.for_version(version).group_size(counts) == expected


def _vllm(model, **options):
    cfg = PlanConfig(available_kv_memory_bytes=10 * GIB, max_num_batched_tokens=8192, max_model_len=8192,
                     primary_layout="hkv", **options)
    return plan(load_model_spec(model), cfg)


def test_chunked_local_attention_lost_the_hybrid_manager_in_0_10_1_to_0_13():
    # Llama-4-Scout: 36 chunked + 12 full layers. 0.13: the hybrid manager is off by default, every
    # layer is cached as full attention (one group of 48); 0.14 keeps chunked and full groups.
    old = _vllm("llama-4-scout-17b-16e-instruct", tp=8, vllm_version="0.13.0").reports["vllm"].layout
    assert [(g.kind.value, g.num_layers) for g in old.groups] == [("full", 48)]
    assert any("Disabling it, by default" in note for note in old.notes)
    new = _vllm("llama-4-scout-17b-16e-instruct", tp=8, vllm_version="0.14.0").reports["vllm"].layout
    assert {g.kind.value for g in new.groups} == {"chunked", "full"}


def test_mamba_all_mode_releases_are_refused_not_guessed():
    # 0.26-0.27 turn prefix caching on for hybrids, and Nemotron-H (SupportsMambaPrefixCaching)
    # then keeps a state per block ('all' mode): not modeled, so the vllm layout says so.
    result = _vllm("nemotron-h-8b-base-8k", vllm_version="0.26.0")
    assert "mamba_cache_mode 'all'" in result.skipped["vllm"]
    assert "vllm" in _vllm("nemotron-h-8b-base-8k", vllm_version="0.26.0", enable_prefix_caching=False).reports
    assert "vllm" in _vllm("nemotron-h-8b-base-8k", vllm_version="0.25.1").reports  # default off before 0.26
    # A GDN hybrid is never in 'all' mode.
    assert "vllm" in _vllm("qwen3-next-80b-a3b", tp=4, vllm_version="0.26.0").reports


def test_hybrid_state_blocks_follow_the_release_default():
    # Nemotron-H-8B at 8k: 4 attention layers in one group; 0.25.1 (prefix caching off): one state
    # block per Mamba group; 0.28.0 ('align'): 2; 0.32.0: 2 + 1 prefill checkpoint.
    def state_blocks(version):
        layout = _vllm("nemotron-h-8b-base-8k", vllm_version=version).reports["vllm"].layout
        return {b for g, b in zip(layout.groups, layout.blocks_per_request(8192)) if g.kind.value == "recurrent"}
    assert [state_blocks(v) for v in ("0.25.1", "0.28.0", "0.32.0")] == [{1}, {2}, {3}]


def test_cli_names_the_release_and_prints_its_log_lines():
    import json

    from hkv.cli.main import app
    from typer.testing import CliRunner
    result = CliRunner().invoke(app, ["plan", "qwen3.6-35b-a3b", "--kv-cache-dtype", "fp8", "--vllm-version", "0.24",
                                      "--max-model-len", "131072", "--available-kv-memory", "5.98GiB",
                                      "--enable-prefix-caching", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["vllm_version"] == "0.24.0"
    assert doc["layouts"]["vllm"]["log_lines"] == ["GPU KV cache size: 567,978 tokens",
                                                   "Maximum concurrency for 131,072 tokens per request: 4.33x"]
    bad = CliRunner().invoke(app, ["plan", "qwen3.6-35b-a3b", "--vllm-version", "0.9.2"])
    assert bad.exit_code != 0 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        "hkv: error: --vllm-version 0.9.2 is outside the releases hkv models (0.10.0 to 0.33.0); pass one of those"]
