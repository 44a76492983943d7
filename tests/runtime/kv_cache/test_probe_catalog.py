"""probe_capacity on catalog layouts, against expectations that do not come from the Layout's
own capacity formula (max_num_requests):

- pinned: five vLLM layouts of real catalog models whose bytes/block and blocks per request are
  worked examples of shared/reference/vllm-hybrid-kv.md (1.6 "Worked examples", and the "Blocks
  per request" list under it), with the pool size, the probe's count and vLLM's log line (2.5 "The
  two log numbers") worked out by hand in the comments;
- catalog-wide: every catalog model and layout, the probe's count against an oracle written here
  from the reference's 2.3 table over the groups' fields, and the probe on pools cut to exactly
  two requests' worth (it must admit 2, and 1 once any pool loses a block: it really pops the
  worst-case blocks from every pool).
"""

from __future__ import annotations

import dataclasses

import pytest

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.catalog import catalog_names
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.layout import BlockBound, KVCacheGroup, Layout
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime.kv_cache.capacity_probe import probe_capacity

GIB = 2**30

# (model, plan options, bytes/block, num_blocks, blocks per request, probe count, vLLM log line).
# All at max_num_batched_tokens 8192, so T = 2 x 8192 = 16,384 (reference 2.3), block size 16.
PINNED = [
    # Gemma-3-27B (1.6): 6 sliding groups + 1 full of 10 layers, bytes/block 1,310,720.
    # num_blocks = 40 x 2^30 / 1,310,720 = 32,768. Per request at L = 131,072 ("Blocks per
    # request"): 8,192 + 6 x 1,089 = 14,726. Probe: (32,768 - 1) // 14,726 = 2 (3 x 14,726 =
    # 44,178 > 32,767). Log: conc = 32,768 / 14,726 = 2.225 -> "2.23x"; tokens =
    # floor(32,768 x 131,072 / 14,726) = floor(4,294,967,296 / 14,726) = 291,658
    # (14,726 x 291,658 = 4,294,955,708, remainder 11,588).
    ("gemma-3-27b-it", {"available_kv_memory_bytes": 40 * GIB, "max_model_len": 131_072},
     1_310_720, 32_768, 14_726, 2,
     "GPU KV cache size: 291,658 tokens, Maximum concurrency for 131,072 tokens per request: 2.23x"),
    # gpt-oss-120b (1.6): sliding x18 then full x18, bytes/block 589,824 = 9 x 2^16.
    # num_blocks = 36 x 2^30 / 589,824 = 9 x 2^32 / (9 x 2^16) = 65,536. Per request: 8,192 + 1,033
    # = 9,225. Probe: 65,535 // 9,225 = 7 (7 x 9,225 = 64,575; 8 x 9,225 = 73,800). Log: conc =
    # 65,536 / 9,225 = 7.104 -> "7.10x"; tokens = floor(2^33 / 9,225) = 931,158 (9,225 x 931,158 =
    # 8,589,932,550, remainder 2,042).
    ("gpt-oss-120b", {"available_kv_memory_bytes": 36 * GIB, "max_model_len": 131_072},
     589_824, 65_536, 9_225, 7,
     "GPU KV cache size: 931,158 tokens, Maximum concurrency for 131,072 tokens per request: 7.10x"),
    # Llama-4-Scout TP=8 (1.6): 3 chunked x12 + full x12, bytes/block 98,304 = 3 x 2^15.
    # num_blocks = 24 x 2^30 / 98,304 = 3 x 2^33 / (3 x 2^15) = 262,144. Per request at L = 2^20:
    # 65,536 + 3 x 1,536 = 70,144. Probe: 262,143 // 70,144 = 3 (3 x 70,144 = 210,432; 4 x =
    # 280,576). Log: conc = 262,144 / 70,144 = 3.737 -> "3.74x"; tokens = floor(2^38 / 70,144) =
    # 3,918,765 (70,144 x 3,918,765 = 274,877,852,160, remainder 54,784).
    ("llama-4-scout-17b-16e-instruct",
     {"available_kv_memory_bytes": 24 * GIB, "max_model_len": 1_048_576, "tp": 8},
     98_304, 262_144, 70_144, 3,
     "GPU KV cache size: 3,918,765 tokens, Maximum concurrency for 1,048,576 tokens per request: 3.74x"),
    # granite-4.0-h-small (1.6): block size 528, 1 full x4 + 9 Mamba x4, bytes/block 8,650,752.
    # num_blocks = 8 x 2^30 // 8,650,752 = 992 (992 x 8,650,752 = 8,581,545,984 <= 8,589,934,592
    # < 993 x 8,650,752 = 8,590,196,736). Per request (align mode, prefix caching on):
    # cdiv(131,072, 528) = 249 + 9 x 3 = 276. Probe: 991 // 276 = 3 (4 x 276 = 1,104). Log:
    # conc = 992 / 276 = 3.594 -> "3.59x"; tokens = floor(992 x 131,072 / 276) =
    # floor(130,023,424 / 276) = 471,099.
    ("granite-4.0-h-small", {"available_kv_memory_bytes": 8 * GIB, "max_model_len": 131_072},
     8_650_752, 992, 276, 3,
     "GPU KV cache size: 471,099 tokens, Maximum concurrency for 131,072 tokens per request: 3.59x"),
    # Nemotron-H-8B (1.6): block size 1040, 1 full x4 + 6 Mamba x4, bytes/block 17,039,360.
    # num_blocks = 8 x 2^30 // 17,039,360 = 504 (504 x 17,039,360 = 8,587,837,440; 505 x =
    # 8,604,876,800 > 8 GiB). Per request at L = 8,192: full cdiv(8,192, 1,040) = 8 (7 x 1,040 =
    # 7,280 < 8,192 <= 8,320) + 6 x 3 states (align mode) = 26. Probe: 503 // 26 = 19 (19 x 26 =
    # 494; 20 x 26 = 520). Log: conc = 504 / 26 = 19.385 -> "19.38x"; tokens = floor(504 x 8,192
    # / 26) = floor(4,128,768 / 26) = 158,798 (26 x 158,798 = 4,128,748).
    ("nemotron-h-8b-base-8k", {"available_kv_memory_bytes": 8 * GIB, "max_model_len": 8_192},
     17_039_360, 504, 26, 19,
     "GPU KV cache size: 158,798 tokens, Maximum concurrency for 8,192 tokens per request: 19.38x"),
]


@pytest.mark.parametrize(("name", "options", "bytes_per_block", "num_blocks", "blocks_per_request",
                          "count", "log_line"), PINNED, ids=[row[0] for row in PINNED])
def test_pinned_catalog_layouts(name, options, bytes_per_block, num_blocks, blocks_per_request, count,
                                log_line):
    report = plan(load_model_spec(name), PlanConfig(max_num_batched_tokens=8192, **options)).reports["vllm"]
    layout = report.layout
    seq_len = options["max_model_len"]
    assert [(p.bytes_per_block, p.num_blocks) for p in layout.pools] == [(bytes_per_block, num_blocks)]
    assert layout.in_flight_tokens == 16_384
    t = layout.in_flight_tokens
    assert sum(_oracle_blocks(g, seq_len, t) for g in layout.groups) == blocks_per_request
    assert probe_capacity(layout, seq_len) == count
    assert report.log_lines == (log_line,)


def _oracle_blocks(group: KVCacheGroup, seq_len: int, in_flight_tokens: int) -> int:
    """Worst-case blocks of one request in one group, written from vllm-hybrid-kv.md 2.3's
    max_memory_usage_bytes table (divided by the page), not from the planner's code:
    full cdiv(L, b); sliding cdiv(min(W - 1 + T, L), b) + 1; chunked cdiv(min(C + T, L), b);
    recurrent its state blocks. hkv's groups (BlockBound.EXACT, docs/layouts.md) never charge a
    sliding request more than the cdiv(L, b) blocks its sequence has."""
    b, t = group.block_size, in_flight_tokens
    if group.kind is CacheKind.RECURRENT:
        return group.num_state_blocks
    if group.kind is CacheKind.SLIDING:
        vllm_blocks = -(-min(group.spec.window_len - 1 + t, seq_len) // b) + 1
        return vllm_blocks if group.bound is BlockBound.VLLM else min(vllm_blocks, -(-seq_len // b))
    if group.kind is CacheKind.CHUNKED:
        return -(-min(group.spec.chunk_len + t, seq_len) // b)
    assert group.kind is CacheKind.FULL, group.kind
    return -(-seq_len // b)


def _oracle_pool_need(layout: Layout, pool_id: int, seq_len: int) -> int:
    t = layout.in_flight_tokens
    return sum(_oracle_blocks(g, seq_len, t) for g in layout.groups if g.pool_id == pool_id)


def _with_pool_blocks(layout: Layout, num_blocks: dict[int, int]) -> Layout:
    pools = tuple(dataclasses.replace(p, num_blocks=num_blocks.get(p.pool_id, p.num_blocks))
                  for p in layout.pools)
    return dataclasses.replace(layout, pools=pools)


def _catalog_layouts(name: str) -> list[tuple[str, Layout]]:
    model = load_model_spec(name)
    return [(f"{layout_name}@{max_len}", report.layout)
            for max_len in (min(8192, model.max_model_len), None)  # Falcon-40B: 2,048 positions
            for layout_name, report in plan(model, PlanConfig(available_kv_memory_bytes=8 * GIB,
                                                              max_model_len=max_len)).reports.items()]


@pytest.mark.parametrize("name", catalog_names())
def test_catalog_probe_against_oracle(name):
    for label, layout in _catalog_layouts(name):
        seq_len = layout.max_model_len
        used_pools = sorted({g.pool_id for g in layout.groups})
        needs = {p: _oracle_pool_need(layout, p, seq_len) for p in used_pools}
        pool_blocks = {p.pool_id: p.num_blocks for p in layout.pools}
        # usable blocks (null block excluded) over each pool's per-request need; the tightest pool wins
        expected = min(max(0, pool_blocks[p] - 1) // needs[p] for p in used_pools)
        assert probe_capacity(layout, seq_len) == expected, (name, label)
        # pools cut to the null block + exactly two requests' worth: two fit, and one block less
        # in any pool leaves room for only one. At most 4,096 tokens, to keep the pools tiny.
        short_len = min(seq_len, 4096)
        two = {p: 1 + 2 * _oracle_pool_need(layout, p, short_len) for p in used_pools}
        assert probe_capacity(_with_pool_blocks(layout, two), short_len) == 2, (name, label)
        for p in used_pools:
            one_less = _with_pool_blocks(layout, {**two, p: two[p] - 1})
            assert probe_capacity(one_less, short_len) == 1, (name, label, p)
