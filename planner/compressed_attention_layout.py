"""vLLM 0.32's KV cache groups for DeepSeek-V4 (model_specs/compressed_attention.py), reproduced.

DeepSeek-V4's caches have pages of many sizes that vLLM cannot unify (MLA pages are never padded to
another page), so its backends declare block-outermost layouts (DEEPSEEK_V4_INDEXER: BLHNC/BLNHC)
and `get_kv_cache_groups` takes the packed path (v1/core/kv_cache_utils.py,
_get_packed_kv_cache_groups), which this module follows step by step:

1. bucket the caches greedily, in registration order, by uniform type: one kind, one window, one
   block size (UniformTypeKVCacheSpecs.is_uniform_type): the 64-token window caches; every
   full-lifetime cache at the cache block size (compressed latents of both ratios and the indexer
   keys: one group); each compressor window (block 8 / window 128, block 4 / window 8);
2. a bucket is balanced when each page size in it has as many layers; the balanced buckets that
   mix page sizes set a floor on repeats per group, and the repeats are `_approximate_gcd` of the
   balanced buckets' largest per-page-size layer counts (least padding, ties to the larger);
   a balanced bucket splits into cdiv(count, repeats) groups taking every k-th pattern repeat,
   an unbalanced one stays whole; a circular-buffer bucket (Step5's tail rings) is a state bucket:
   it splits to the states the widest block already holds; with no repeats (no balanced
   mixed-page bucket) every bucket stays whole but the sliding ones, which split the same way;
3. every group's block packs its layers' pages side by side; one pool of num_blocks =
   available // bytes_per_block, where bytes_per_block is the widest group's page sum
   (pool_sizing.size_pool's rule), rounded up to the specs' block stride alignment where they set
   one (Step5 only: planner/block_stride.py).

vLLM 0.33 moved this code to v1/core/kv_cache_planning.py unchanged (_get_packed_kv_cache_groups,
_get_kv_cache_bytes_per_block), and its DeepSeek-V4 cache modules keep 0.32's specs (the packed block
stride alignment it adds is passed by DeepSeek-V4.1 only); checked by reading, the oracle runs 0.32.

A request holds cdiv(L, block) blocks in the full group (whatever the ratio: a block of 256 tokens
holds 64 states at 4:1, 2 at 128:1) and cdiv(min(W - 1 + T, L), block) + 1 in each sliding group, so
concurrency = num_blocks / their sum and vLLM's "GPU KV cache size" = int(concurrency x L).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind
from hkv.model_specs.family_specs import is_circular_buffer_spec, is_compressed_spec, is_summary_spec
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.errors import InvalidInputError
from hkv.planner.layout import cdiv
from hkv.planner.paged_layer import PagedLayer

if TYPE_CHECKING:
    from hkv.model_specs.compressed_attention import CompressedCacheSpec

DSV4_BLOCK_LEN = 256  # DeepseekV4IndexerBackend.get_supported_kernel_block_sizes: [256], the cache block
NO_OPTIONS = CacheOptions()  # a padded latent's kind and type do not depend on the options
DSV4_BACKENDS = "FLASHMLA_SPARSE_DSV4 + DEEPSEEK_SPARSE_SWA + DEEPSEEK_V4_INDEXER"
# Specs only models whose backends declare block-outermost layouts have (DEEPSEEK_V4_INDEXER, dots3's,
# STEP5_DSA: BLNHC): their presence sends grouping down the packed path.
# (family_specs.py's tests: the classes' modules load only with their models)
BLOCK_OUTERMOST_SPECS = (is_compressed_spec, is_summary_spec, is_circular_buffer_spec)


def _specs(model: ModelSpec) -> list[CompressedCacheSpec]:
    return [spec for layer in model.cache_layers
            if is_compressed_spec(spec := layer.cache_spec(NO_OPTIONS))]


def has_compressed_cache(model: ModelSpec) -> bool:
    """DeepSeek-V4: a cache that stores one state per several tokens (dots3's padded pages do not)."""
    return any(spec.tokens_per_state > 1 for spec in _specs(model))


def has_sliding_mla_window(model: ModelSpec) -> bool:
    """A sliding-window MLA page (vLLM's SlidingWindowMLASpec: DeepSeek-V4's windows and compressor
    states, dots3's sliding layers)."""
    return any(spec.kind is CacheKind.SLIDING for spec in _specs(model))


def dsv4_block_size(requested: int | None) -> int:
    """The cache block size: 256, the only one the DeepSeek-V4 indexer backend runs."""
    if requested is None or requested == DSV4_BLOCK_LEN:
        return DSV4_BLOCK_LEN
    raise InvalidInputError(f"block_size {requested}: vLLM's DeepSeek-V4 indexer backend (DEEPSEEK_V4_INDEXER) "
                            f"runs {DSV4_BLOCK_LEN}-token blocks only; pass {DSV4_BLOCK_LEN} or leave --block-size "
                            "out", fields=("block_size",))


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """vLLM _approximate_gcd: the d in [lower_bound, max] with the least sum of (d - x % d) % d,
    ties to the larger d."""
    best_d, best_pad = max(1, lower_bound), -1
    for d in range(max(1, lower_bound), max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad < 0 or pad <= best_pad:
            best_d, best_pad = d, pad
    return best_d


def _type_key(layer: PagedLayer) -> tuple[CacheKind, int | None, int]:
    """vLLM's uniform type: one kind, one window (sliding), one block size."""
    spec = layer.spec
    window = spec.window_len if isinstance(spec, AttentionCacheSpec) else None
    return (layer.kind, window, layer.block_size)


def _buckets(layers: list[PagedLayer]) -> list[list[PagedLayer]]:
    buckets: dict[tuple[CacheKind, int | None, int], list[PagedLayer]] = {}
    for layer in layers:
        buckets.setdefault(_type_key(layer), []).append(layer)
    return list(buckets.values())


def _by_page(bucket: list[PagedLayer]) -> list[list[PagedLayer]]:
    pages: dict[int, list[PagedLayer]] = {}
    for layer in bucket:
        pages.setdefault(layer.page_size_bytes, []).append(layer)
    return list(pages.values())


def _max_layers_per_page(bucket: list[PagedLayer]) -> int:
    return Counter(layer.page_size_bytes for layer in bucket).most_common(1)[0][1]


def _is_balanced(bucket: list[PagedLayer]) -> bool:
    return len({len(same) for same in _by_page(bucket)}) == 1


def _widest_group_bytes(bucket: list[PagedLayer], num_groups: int) -> int:
    return sum(cdiv(len(same), num_groups) * same[0].page_size_bytes for same in _by_page(bucket))


def _split(bucket: list[PagedLayer], num_groups: int) -> list[list[PagedLayer]]:
    """Group i takes every num_groups-th repeat of the bucket's page pattern."""
    if num_groups == 1:
        return [bucket]
    repeats = list(zip(*_by_page(bucket)))
    return [[layer for repeat in repeats[i::num_groups] for layer in repeat] for i in range(num_groups)]


def packed_paged_groups(layers: list[PagedLayer]) -> list[list[PagedLayer]] | None:
    """vLLM's packed grouping (module docstring), or None without a cache whose backend declares
    block-outermost layouts (DeepSeek-V4; dots3, model_specs/padded_latent_layers.py; Step5's sparse
    layers, model_specs/step5_layers.py)."""
    if not any(is_spec(layer.spec) for layer in layers for is_spec in BLOCK_OUTERMOST_SPECS):
        return None
    buckets = _buckets(layers)
    balanced = [_is_balanced(b) for b in buckets]
    floor = max((_max_layers_per_page(b) for b, ok in zip(buckets, balanced) if ok and len(_by_page(b)) > 1),
                default=0)
    repeats = approximate_gcd([_max_layers_per_page(b) for b, ok in zip(buckets, balanced) if ok],
                              floor) if floor else 0

    def num_groups(bucket: list[PagedLayer], ok: bool) -> int:
        return cdiv(_max_layers_per_page(bucket), repeats) if ok and repeats else 1

    def is_state(bucket: list[PagedLayer]) -> bool:  # a circular buffer (Step5's CSA tail ring); no Mamba here
        return bucket[0].kind is CacheKind.CIRCULAR or (not repeats and bucket[0].kind is CacheKind.SLIDING)

    anchor = max(_widest_group_bytes(b, len(b) if is_state(b) else num_groups(b, ok))
                 for b, ok in zip(buckets, balanced))
    groups: list[list[PagedLayer]] = []
    for bucket, ok in zip(buckets, balanced):
        n = num_groups(bucket, ok)
        if is_state(bucket):
            n = max(n, cdiv(len(bucket), max(anchor // bucket[0].page_size_bytes, 1)))
        groups.extend(_split(bucket, n))
    return groups
