"""hkv's `vllm` layout of every catalog model against vLLM 0.32's own KV cache planning.

For each catalog model and scenario, hkv's per-layer specs (TP 1, the model's KV dtype) are
turned into vLLM spec objects (oracle_bridge) and vLLM groups and sizes them; the test asserts
that hkv's layout is the same: groups (order, kind, layer membership, block size, page size),
bytes per block, num_blocks, `get_max_concurrency_for_kv_cache_config`, the capacity line vLLM
logs, and the padding / Mamba-alignment messages.

vLLM settings are those of a single-GPU CUDA engine with FlashAttention (hkv's target):
`--block-size` as given (user-specified), layout LBNHC, async scheduling on (so
`max_in_flight_tokens = 2 x max_num_batched_tokens`, as hkv assumes), chunked prefill on,
prefix caching as the scenario says (align vs none Mamba cache mode).
"""

from __future__ import annotations

import functools

import oracle_bridge as ob
import pytest
from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.compressed_attention import CompressedCacheSpec
from hkv.planner.capacity.capacity import vllm_log_lines
from hkv.planner.engines.vllm.rules import CURRENT_LOG_FORMAT
from hkv.planner.errors import LayoutUnavailableError

GIB = 2**30

SCENARIOS = {
    # modest budget, short requests, small batches
    "4GiB-L8k": lambda m: ob.Scenario(4 * GIB, 8192, 2048),
    # large odd budget (floor division of num_blocks), the model's whole context
    "37GiB-Lmax": lambda m: ob.Scenario(37 * GIB + 12345, m.max_model_len, 8192),
    # prefix caching off (Mamba "none" mode: one state block, block = max_model_len), block 32
    "noprefix-bs32": lambda m: ob.Scenario(3 * GIB + 1, 32768, 4096, block_size=32,
                                           enable_prefix_caching=False),
    # fp8 KV cache (per-tensor scale, 1 byte per element); recurrent states keep the model dtype
    "fp8-6GiB-L16k": lambda m: ob.Scenario(6 * GIB + 7, 16384, 4096, kv_cache_dtype="fp8"),
}

MODELS = ob.catalog_names()


@functools.lru_cache(maxsize=None)
def model(name: str):
    return ob.load_model(name)


@functools.lru_cache(maxsize=None)
def case(name: str, scenario: str, hybrid: bool = True):
    m = model(name)
    reason = ob.vllm_rejects(m)
    if reason:
        pytest.skip(reason)
    if any(isinstance(layer.cache_spec(CacheOptions()), CompressedCacheSpec) for layer in m.cache_layers):
        pytest.skip("block-outermost packed pages at the backend's own block size (DeepSeek-V4, dots3): "
                    "test_deepseek_v4_layout.py / test_dots3_layout.py check them against vLLM")
    sc = SCENARIOS[scenario](m)
    layout_name = "vllm" if hybrid else "vllm-no-hybrid"
    try:
        cfg = ob.plan_config(sc)
        from hkv.planner.budget.memory_budget import compute_memory_budget
        from hkv.planner.plan import build_layout
        layout = build_layout(layout_name, m, cfg, compute_memory_budget(m, cfg))
    except LayoutUnavailableError as err:
        layout = err
    try:
        vllm = ob.run_vllm(m, sc, hybrid=hybrid)
    except (ValueError, NotImplementedError, AssertionError) as err:
        vllm = err
    return m, sc, layout, vllm


def _both(name: str, scenario: str, hybrid: bool = True):
    m, sc, layout, vllm = case(name, scenario, hybrid)
    if isinstance(vllm, Exception):
        assert isinstance(layout, Exception), (
            f"vLLM refuses ({type(vllm).__name__}: {vllm}) but hkv built a layout")
        pytest.skip(f"vLLM and hkv both refuse: {vllm}")
    assert not isinstance(layout, Exception), f"hkv refuses ({layout}) but vLLM builds {len(vllm.groups)} groups"
    return m, sc, layout, vllm


params = pytest.mark.parametrize("scenario", list(SCENARIOS))
models = pytest.mark.parametrize("name", MODELS)


@models
@params
def test_groups(name: str, scenario: str) -> None:
    m, sc, layout, vllm = _both(name, scenario)
    ours = ob.hkv_group_view(layout)
    theirs = [ob.group_view(g) for g in vllm.groups]
    assert [len(g["layers"]) for g in ours] == [len(g["layers"]) for g in theirs]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"group {i}: hkv {a} != vLLM {b}"


@models
@params
def test_num_blocks(name: str, scenario: str) -> None:
    m, sc, layout, vllm = _both(name, scenario)
    (pool,) = layout.pools
    assert pool.bytes_per_block == ob.bytes_per_block(vllm.vllm_config, vllm.groups)
    assert pool.num_blocks == vllm.kv_cache_config.num_blocks
    assert pool.num_slots == max(len(g.layer_names) for g in vllm.groups)


@models
@params
def test_max_concurrency(name: str, scenario: str) -> None:
    m, sc, layout, vllm = _both(name, scenario)
    assert layout.in_flight_tokens == vllm.vllm_config.max_in_flight_tokens
    assert layout.max_concurrency(sc.max_model_len) == vllm.max_concurrency


@models
@params
def test_capacity_log_line(name: str, scenario: str) -> None:
    m, sc, layout, vllm = _both(name, scenario)
    ours = vllm_log_lines(layout, CURRENT_LOG_FORMAT, "CPU")  # the oracle process runs on vLLM's CPU platform
    assert vllm.log_line is not None, "vLLM logged no capacity line"
    assert ours == (vllm.log_line,)


def _notes_of_interest(lines) -> list[str]:
    keys = ("padding layers", "Setting attention block size", "Padding mamba page size")
    return sorted({line for line in lines if any(k in line for k in keys)})


@models
@params
def test_notes_match_vllm_messages(name: str, scenario: str) -> None:
    """hkv's layout notes repeat vLLM's padding-layer and Mamba-alignment messages verbatim."""
    m, sc, layout, vllm = _both(name, scenario)
    assert _notes_of_interest(layout.notes) == _notes_of_interest(vllm.messages)


@models
@pytest.mark.parametrize("scenario", ["4GiB-L8k", "37GiB-Lmax"])
def test_no_hybrid_layout(name: str, scenario: str) -> None:
    """hkv's `vllm-no-hybrid` against vLLM with --disable-hybrid-kv-cache-manager."""
    m, sc, layout, vllm = _both(name, scenario, hybrid=False)
    ours = ob.hkv_group_view(layout)
    theirs = [ob.group_view(g) for g in vllm.groups]
    assert ours == theirs
    (pool,) = layout.pools
    assert pool.num_blocks == vllm.kv_cache_config.num_blocks
    assert pool.bytes_per_block == ob.bytes_per_block(vllm.vllm_config, vllm.groups)
    assert layout.max_concurrency(sc.max_model_len) == vllm.max_concurrency
