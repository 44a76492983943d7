"""The DSA indexer's key cache in the runtime: a full-attention spec with its own page, so the
coordinator serves it with FullAttentionManager (no kind manager of its own): one block per
block_size tokens, held until the request frees, prefix-cacheable. Tiny pools, hand-counted blocks.

The group is what the planner builds for a DSA model: one layer's MLA latent (576 B/token in fp8)
and its indexer keys (132 B/token, uint8) in one group, block 4, so one block holds 4 x 708 bytes.
"""

from __future__ import annotations

import pytest

from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, CacheRole
from hkv.planner.layout import KVCacheGroup, Layout, Pool
from hkv.runtime import KVCacheManager, Request
from hkv.runtime.kv_cache.full_attention_manager import FullAttentionManager

BLOCK = 4
LATENT = AttentionCacheSpec(CacheKind.FULL, 1, 576, 0, 1, is_mla=True)
INDEXER = AttentionCacheSpec(CacheKind.FULL, 1, 132, 0, 1, is_mla=True, role=CacheRole.INDEXER)


def dsa_manager(num_blocks: int) -> KVCacheManager:
    """`num_blocks` blocks, the null block included (as in every runtime pool)."""
    pages = (LATENT.page_size_bytes(BLOCK), INDEXER.page_size_bytes(BLOCK))
    group = KVCacheGroup(CacheKind.FULL, ("layers.0.attn", "layers.0.indexer"), (0, 0), LATENT, BLOCK,
                         sum(pages) // 2, 0, None)
    layout = Layout("test", (group,), (Pool(0, "shared", num_blocks, sum(pages), 2),), 64, 8, 0)
    layout.check_integrity()
    return KVCacheManager(layout)


def test_the_indexer_group_runs_on_the_full_attention_manager() -> None:
    (manager,) = dsa_manager(8).coordinator.managers
    assert type(manager) is FullAttentionManager


# (prompt tokens, blocks it holds = cdiv(tokens, 4), fits in 5 usable blocks)
ALLOCATIONS = [(1, 1, True), (4, 1, True), (5, 2, True), (20, 5, True), (21, 6, False)]


@pytest.mark.parametrize(("tokens", "blocks", "fits"), ALLOCATIONS)
def test_a_request_holds_one_block_per_block_size_tokens(tokens: int, blocks: int, fits: bool) -> None:
    kv = dsa_manager(6)  # 5 usable + the null block
    request = Request("r", list(range(tokens)), 1)
    got = kv.allocate_slots(request, tokens)
    assert (got is not None) == fits
    if fits:
        assert [len(ids) for ids in kv.block_ids(request)] == [blocks]
    kv.check_integrity()


def test_blocks_are_kept_until_free_and_then_serve_a_prefix_hit() -> None:
    """A 12-token prompt holds 3 blocks through decode; freed, a request sharing its first 8
    tokens hits 2 full blocks (8 tokens); the third block's tokens differ."""
    kv = dsa_manager(8)
    first = Request("a", list(range(12)), 4)
    kv.allocate_slots(first, 12)
    first.num_computed_tokens = 12
    assert [len(ids) for ids in kv.block_ids(first)] == [3]
    kv.free(first)
    second = Request("b", list(range(8)) + [99, 98, 97, 96], 4)
    hit = kv.get_computed_blocks(second)
    assert hit.num_tokens == 8 and [len(ids) for ids in hit.block_ids] == [2]
    kv.check_integrity()
