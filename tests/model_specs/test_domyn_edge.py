"""DomynEdge (vLLM 0.33 DomynEdgeForCausalLM), planned from the keys vLLM 0.33 reads; every figure by hand.

Source: vllm-0.33.0 wheel, vllm/model_executor/models/domyn_edge.py:
- l.169: window_size = config.window_sizes[layer_idx][0]; l.106-107: per_layer_sliding_window =
  window_size + 1 if window_size > 0 else None (HF's (w, 0) attends to w + 1 keys);
- l.165: head_dim = config.per_layer_config[layer_idx].head_dim; l.162: num_kv_heads =
  config.num_key_value_heads; l.97-108: one Attention (K and V) per layer, no KV sharing;
- l.145-156: position_layers[i] must be "rope" or "nope".
Fixture tests/data/configs/domyn_edge.json is RECONSTRUCTED (its _source says from what): 36 layers,
2 nope + 8 x (3 rope + 1 nope) + 2 nope; rope layers window (1024, 0) and head_dim 64, nope layers
(-1, 0) and head_dim 256; 8 KV heads.

Bytes per token per layer at 2-byte K/V: sliding 2 x 8 x 64 x 2 = 2,048 B; full 2 x 8 x 256 x 2 = 8,192 B.
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

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "configs" / "domyn_edge.json"
FULL, SLIDING = CacheKind.FULL, CacheKind.SLIDING
GIB = 2**30


def _config(**changes: object) -> dict:
    return {**json.loads(FIXTURE.read_text()), **changes}


def _specs(config: dict) -> list:
    return [spec for _, spec in from_hf_config(config, "domyn").cache_specs(CacheOptions(kv_dtype_bytes=2))]


def test_fixture_is_marked_reconstructed() -> None:
    source = _config()["_source"]
    assert source.startswith("vllm/model_executor/models/domyn_edge.py") and "RECONSTRUCTED" in source


def test_layer_kinds_windows_and_bytes() -> None:
    specs = _specs(_config())
    assert [s.kind for s in specs] == [FULL, FULL] + [SLIDING, SLIDING, SLIDING, FULL] * 8 + [FULL, FULL]
    assert {(s.bytes_per_token, s.window_len) for s in specs if s.kind is SLIDING} == {(2048, 1025)}
    assert {(s.bytes_per_token, s.window_len) for s in specs if s.kind is FULL} == {(8192, None)}


@pytest.mark.parametrize("pair,kind,window", [
    ([511, 0], SLIDING, 512),  # (w, 0) -> w + 1 keys
    ([1, 0], SLIDING, 2),
    ([0, 0], FULL, None),  # window_size > 0 is the only sliding case (l.107)
    ([-1, 0], FULL, None),
])
def test_window_pair_to_vllm_window(pair: list[int], kind: CacheKind, window: int | None) -> None:
    config = _config()
    config["window_sizes"] = [pair] + config["window_sizes"][1:]
    first = _specs(config)[0]
    assert (first.kind, first.window_len) == (kind, window)


def test_vllm_layout_by_hand() -> None:
    """Pages at block 16: full 16 x 8,192 = 131,072 B, sliding 16 x 2,048 = 32,768 B. vLLM unifies page
    sizes by raising the smaller spec's block: sliding 16 x 4 = 64 tokens (page 131,072 B). 12 full +
    24 sliding layers: 24 >= 1.5 x 12, so group size 12: the full group (layer 0 registers first), then
    two sliding groups. Block 12 x 131,072 = 1,572,864 B; 40 GiB = 42,949,672,960 B // 1,572,864 =
    27,306 blocks (remainder 1,048,576). At 8,192 tokens (max_num_batched_tokens 8,192): full 8,192 / 16
    = 512 blocks; sliding min(1,024 + 8,192, 8,192) / 64 + 1 = 129 per sliding group."""
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=40 * GIB, max_model_len=8192,
                     max_num_batched_tokens=8192, block_size=16, primary_layout="vllm")
    layout = plan(from_hf_config(_config(), "domyn"), cfg).reports["vllm"].layout
    assert [(g.kind, g.block_size, len(g.layer_names)) for g in layout.groups] == [
        (FULL, 16, 12), (SLIDING, 64, 12), (SLIDING, 64, 12)]
    assert {g.page_size_bytes for g in layout.groups} == {131_072}
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (1_572_864, 27_306)
    assert tuple(layout.blocks_per_request(8192)) == (512, 129, 129)


def test_param_count_by_hand() -> None:
    """hidden 2,560, 32 heads, 8 KV heads, intermediate 9,728, vocab 115,269, tied.
    Rope layer (d 64): q 2,560 x 2,048 = 5,242,880, k + v 2 x 2,560 x 512 = 2,621,440, o 5,242,880,
    k_norm 64 (q_norm has no weight, l.109): 13,107,264. Nope layer (d 256): q 2,560 x 8,192 =
    20,971,520, k + v 2 x 2,560 x 2,048 = 10,485,760, o 20,971,520, k_norm 256: 52,429,056.
    MLP 3 x 2,560 x 9,728 = 74,711,040; norms 4 x 2,560 = 10,240.
    24 x 87,828,544 + 12 x 127,150,336 = 2,107,885,056 + 1,525,804,032 = 3,633,689,088;
    + embedding 115,269 x 2,560 = 295,088,640 + final norm 2,560 = 3,928,780,288."""
    assert from_hf_config(_config(), "domyn").num_params == 3_928_780_288


def test_untied_param_count_adds_lm_head() -> None:
    assert from_hf_config(_config(tie_word_embeddings=False), "domyn").num_params == 3_928_780_288 + 295_088_640


def test_model_type_spelled_as_vllm_module() -> None:
    assert len(_specs(_config(model_type="domyn_edge"))) == 36


def test_fork_head_sizes_that_agree_are_accepted() -> None:
    sizes = [256, 256] + [64, 64, 64, 256] * 8 + [256, 256]
    assert len(_specs(_config(head_sizes=sizes))) == 36


def test_fork_head_sizes_without_per_layer_config_are_refused() -> None:
    """The fork's spelling: head_sizes per layer, head_dim = max. 0.33 never reads head_sizes and would
    build layer 2 with head_dim 256, which the checkpoint's 64-wide weights do not fit."""
    config = _config(head_sizes=[256, 256] + [64, 64, 64, 256] * 8 + [256, 256])
    del config["per_layer_config"]
    with pytest.raises(InvalidConfigError) as err:
        from_hf_config(config, "domyn")
    assert "disagrees at layer 2" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("change,match", [
    ({"window_sizes": None}, "needs window_sizes"),
    ({"window_sizes": [[1024, 0]] * 35}, "list of 36"),
    ({"window_sizes": [[True, 0]] * 36}, "window_sizes\\[0\\] must be"),
    ({"position_layers": ["rope"] * 35 + ["alibi"]}, "position_layers must list 36"),
    ({"position_layers": None}, "position_layers must list 36"),
])
def test_refusals(change: dict, match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        from_hf_config(_config(**change), "domyn")
