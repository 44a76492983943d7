"""Qwen3.5 / Qwen3.6 (gated delta net + full attention, nested text_config) against a public vLLM
log and hand arithmetic (issue 11).

The public log: vLLM 0.24.0 serving Qwen3.6-35B-A3B with fp8 KV, max_model_len 131,072 and
5.98 GiB of KV memory printed "GPU KV cache size: 567,978 tokens" and "Maximum concurrency for
131,072 tokens per request: 4.33x" on two lines. 0.24.0 already prints int(concurrency x
max_model_len): 567,978 / 131,072 = 4.3333. vLLM 0.24 leaves prefix caching off for hybrid models
by default (ModelConfig.is_prefix_caching_supported), which holds one GDN state per request and
gives 4.53x; the logged 4.33x is the "align" mode of --enable-prefix-caching (two states), so that
run had prefix caching enabled. The same holds for the 0.20.2 MTP log below.
"""

import json

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.layout import cdiv
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

GIB = 2**30

# By hand, per GDN layer of the 35B-A3B (16 key heads x 128, 32 value heads x 128, conv kernel 4):
#   conv state: (2 x 16 x 128 + 32 x 128) channels x (4 - 1) x 2 B (bf16) = 49,152 B
#   SSM state:  32 x 128 x 128 x 4 B (float32, the config's mamba_ssm_dtype) = 2,097,152 B
# Attention, fp8: 2 (K, V) x 2 kv heads x 256 x 1 B = 1,024 B per token and layer, so vLLM raises
# the attention block to cdiv(2,146,304, 1,024) = 2,096 tokens (a multiple of 16) to hold a state.
STATE_BYTES = 49_152 + 2_097_152
BLOCK_TOKENS = 2096


def _plan(name_or_dir, kv_gib: float, **options):
    cfg = PlanConfig(available_kv_memory_bytes=int(kv_gib * GIB), kv_cache_dtype="fp8", max_model_len=131072,
                     primary_layout="vllm", **options)
    return plan(load_model_spec(name_or_dir), cfg)


LOG_0_24 = ("GPU KV cache size: 567,978 tokens", "Maximum concurrency for 131,072 tokens per request: 4.33x")


@pytest.mark.parametrize("kv_gib", [5.977, 5.98, 5.985])  # the log's "5.98 GiB", rounded to 0.01
def test_the_catalog_config_reproduces_the_public_0_24_log(kv_gib):
    # 2,096-token attention block of 10 layers x 1,024 B + 3 GDN groups of 10 states: a block is
    # 40 pages of 2,146,304 B; 5.98 GiB holds 299 of them. A request: cdiv(131,072, 2,096) = 63
    # attention blocks + 3 x 2 states = 69; 299 / 69 = 4.3333 -> int(4.3333 x 131,072) = 567,978.
    # 299 blocks need 6,417,448,960 B = 5.9767 GiB: every budget from there to 5.985 GiB prints the
    # log's numbers (below it, 298 blocks).
    result = _plan("qwen3.6-35b-a3b", kv_gib, vllm_version="0.24.0", enable_prefix_caching=True)
    vllm = result.reports["vllm"]
    kinds = [g.kind.value for g in vllm.layout.groups]
    assert sorted(kinds) == ["full", "recurrent", "recurrent", "recurrent"]  # 30 GDN in 3 groups of 10
    assert {g.block_size for g in vllm.layout.groups if g.kind.value == "full"} == {BLOCK_TOKENS}
    state = next(g for g in vllm.layout.groups if g.kind.value == "recurrent").spec
    assert state.state_bytes == STATE_BYTES
    assert vllm.layout.pools[0].num_blocks == 299 and sum(vllm.layout.blocks_per_request(131072)) == 69
    assert vllm.log_lines == LOG_0_24


def test_vllm_0_24_defaults_to_no_prefix_caching_for_hybrids():
    # Mode "none": one GDN state per request: 63 + 3 = 66 blocks; 299 / 66 = 4.5303 x 131,072 = 593,795.
    vllm = _plan("qwen3.6-35b-a3b", 5.98, vllm_version="0.24.0").reports["vllm"]
    assert sum(vllm.layout.blocks_per_request(131072)) == 66
    assert vllm.log_lines == ("GPU KV cache size: 593,795 tokens",
                              "Maximum concurrency for 131,072 tokens per request: 4.53x")
    # vLLM 0.32 turns prefix caching on for hybrids by default and prints one line.
    current = _plan("qwen3.6-35b-a3b", 5.98, vllm_version="0.32.0").reports["vllm"]
    assert current.log_lines == (", ".join(LOG_0_24),)


def test_vllm_before_0_17_does_not_serve_qwen3_5():
    cfg = PlanConfig(available_kv_memory_bytes=int(5.98 * GIB), kv_cache_dtype="fp8", vllm_version="0.16.0")
    result = plan(load_model_spec("qwen3.6-35b-a3b"), cfg)
    assert "vllm" not in result.reports and "no model class for qwen3_5_moe_text" in result.skipped["vllm"]


def test_transformers_default_configs_plan(tmp_path):
    transformers = pytest.importorskip("transformers")
    for name, config in (("dense", transformers.Qwen3_5Config()), ("moe", transformers.Qwen3_5MoeConfig())):
        config.save_pretrained(tmp_path / name)
        spec = load_model_spec(str(tmp_path / name))
        # the layer mix: transformers' own layer_types name the full-attention layers
        layer_types = config.text_config.layer_types
        expected_full = [i for i, t in enumerate(layer_types) if t == "full_attention"]
        assert [l.layer_idx for l in spec.cache_layers if type(l).__name__ == "AttentionDesc"] == expected_full
        assert len(spec.cache_layers) == len(layer_types)
        # vLLM 0.32's blocks, in steps of 16 (0.33 steps by 64 on an H200: tests/planner/test_vllm_0_33.py)
        result = plan(spec, PlanConfig(gpu="h200", max_model_len=32768, vllm_version="0.32.0"))
        assert result.reports["vllm"].capacity.max_num_requests > 0, name
        # transformers' defaults omit mamba_ssm_dtype, so vLLM keeps the state in the model dtype:
        # conv 49,152 B + SSM 32 x 128 x 128 x 2 B; the bf16 page is 2 x kv heads x 256 x 2 B per token.
        bf16_state = 49_152 + 32 * 128 * 128 * 2
        page_per_token = 2 * config.text_config.num_key_value_heads * 256 * 2
        block = cdiv(cdiv(bf16_state, page_per_token), 16) * 16
        assert {g.block_size for g in result.reports["vllm"].layout.groups if g.kind.value == "full"} == {block}


def test_without_float32_state_the_block_halves(tmp_path):
    # The same model with the SSM state in bf16 (no mamba_ssm_dtype): cdiv(49,152 + 1,048,576,
    # 1,024) = 1,072 tokens in vLLM 0.32, and the 0.24.0 log's 4.33x is out of reach.
    from hkv.model_specs.catalog import lookup_catalog

    raw = lookup_catalog("qwen3.6-35b-a3b").load_config()
    del raw["text_config"]["mamba_ssm_dtype"]
    (tmp_path / "config.json").write_text(json.dumps(raw))
    vllm = _plan(str(tmp_path / "config.json"), 5.98, vllm_version="0.32.0").reports["vllm"]
    assert {g.block_size for g in vllm.layout.groups if g.kind.value == "full"} == {1072}
    assert not vllm.log_lines[0].endswith("4.33x")


def test_mtp_speculative_decoding_reproduces_the_public_0_20_2_log():
    # The public vLLM 0.20.2 log of Qwen3.6-35B-A3B with MTP (2 speculative tokens, fp8 KV,
    # max_model_len 262,144, 66.58 GiB, max_num_batched_tokens 65,536, max_num_seqs 8) printed
    # "Add 3 padding layers", a 2,128-token attention block, 5,747,892 tokens and 21.93x. By hand:
    # - the MTP layer is one more full-attention layer: 11 full + 30 GDN; vLLM's group size is
    #   11 (30 >= 1.5 x 11), so the GDN layers go in 3 groups of 10: 3 padding slots;
    # - the conv state keeps the draft tokens too: (4 - 1 + 2) x 8,192 x 2 B = 81,920, plus the
    #   float32 SSM state 2,097,152 = 2,179,072 B = 2,128 tokens of 1,024 B (a multiple of 16);
    # - a block is 11 slots x 2,128 x 1,024 B: 66.58 GiB holds 2,982 of them;
    # - a request holds cdiv(262,144, 2,128) = 124 full blocks and, per GDN group, 2 live states
    #   + 2 speculative ones: 124 + 3 x 4 = 136; 2,982 / 136 = 21.93x, x 262,144 = 5,747,892.
    cfg = PlanConfig(available_kv_memory_bytes=int(66.58 * GIB), kv_cache_dtype="fp8", max_model_len=262144,
                     max_num_batched_tokens=65536, max_num_seqs=8, speculative_tokens=2, primary_layout="vllm",
                     vllm_version="0.20.2", enable_prefix_caching=True)
    vllm = plan(load_model_spec("qwen3.6-35b-a3b"), cfg).reports["vllm"]
    layout = vllm.layout
    assert [(g.kind.value, g.num_layers) for g in layout.groups] == [("recurrent", 10)] * 3 + [("full", 11)]
    assert layout.padding_slots() == 3 and {g.block_size for g in layout.groups} == {2128}
    assert layout.pools[0].num_blocks == 2982 and sum(layout.blocks_per_request(262144)) == 136
    assert "Add 3 padding layers, may waste at most 10.00% KV cache memory" in layout.notes
    assert vllm.log_lines == ("GPU KV cache size: 5,747,892 tokens",
                              "Maximum concurrency for 262,144 tokens per request: 21.93x")


def test_without_speculative_tokens_the_mtp_layer_has_no_cache():
    spec = load_model_spec("qwen3.6-35b-a3b")
    assert len(spec.draft_layers) == 1 and spec.draft_layers[0].layer_idx == 40
    layout = plan(spec, PlanConfig(gpu="h200", max_model_len=32768)).reports["vllm"].layout
    assert sum(g.num_layers for g in layout.groups) == 40
