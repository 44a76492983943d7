"""A cache layer with its page decided: the unit that grouping partitions."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, LayerCacheSpec
from hkv.model_specs.family_specs import is_compressed_spec, is_conv_state_spec
from hkv.model_specs.layer_desc import CacheLayer
from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.cache_options import CacheOptions
from hkv.planner.errors import LayoutUnavailableError


@dataclass(frozen=True)
class PagedLayer:
    name: str
    layer_idx: int
    spec: LayerCacheSpec
    block_size: int  # tokens per block
    page_size_bytes: int  # padded page of one block of this layer

    @property
    def kind(self) -> CacheKind:
        return self.spec.kind

    @property
    def bucket_key(self) -> tuple[LayerCacheSpec, int, int]:
        """Layers with equal keys may share a group (vLLM buckets by spec equality)."""
        return (self.spec, self.block_size, self.page_size_bytes)


def owned_cache_layers(model: ModelSpec, opts: CacheOptions, *,
                       engine_windows: bool = False) -> list[tuple[CacheLayer, LayerCacheSpec]]:
    """Cache layers that own memory (KV-shared layers dropped), in registration order."""
    return [(layer, spec) for layer, spec in model.cache_specs(opts, engine_windows=engine_windows)
            if spec is not None]


def attention_page_layers(entries: list[tuple[CacheLayer, LayerCacheSpec]], block_size: int,
                          promote_local: bool = False) -> list[PagedLayer]:
    """Attention layers paged at `block_size` (optionally promoted to full attention), or at the
    block their engine fixes (a conv state's kernel, ConvStateCacheSpec)."""
    layers = []
    for layer, spec in entries:
        if not isinstance(spec, AttentionCacheSpec):
            continue
        if promote_local:
            spec = spec.as_full()
        size = block_size
        if (is_conv_state_spec(spec) or is_compressed_spec(spec)) and spec.block_len is not None:
            size = spec.block_len
        layers.append(PagedLayer(layer.name, layer.layer_idx, spec, size, spec.page_size_bytes(size)))
    return layers


def unify_page_sizes(layers: list[PagedLayer]) -> list[PagedLayer]:
    """Make every page as large as the largest one (vLLM unify_kv_cache_spec_page_size).

    State pages are padded; an attention page that divides the largest multiplies its block
    size; otherwise a non-MLA attention page is padded. MLA pages that do not divide raise.
    """
    if not layers:
        return layers
    if any(is_compressed_spec(layer.spec) for layer in layers):
        raise LayoutUnavailableError("DeepSeek-V4's and dots3's caches pack pages of many sizes side by side in "
                                     "one block (vLLM's block-outermost packing); hkv models that for the vllm "
                                     "and hkv layouts only", fields=("layout",))
    page_max = max(layer.page_size_bytes for layer in layers)
    unified = []
    for layer in layers:
        page = layer.page_size_bytes
        if page == page_max:
            unified.append(layer)
        elif layer.kind is CacheKind.RECURRENT:
            unified.append(replace(layer, page_size_bytes=page_max))
        elif page_max % page == 0:
            unified.append(replace(layer, block_size=layer.block_size * (page_max // page),
                                   page_size_bytes=page_max))
        elif isinstance(layer.spec, AttentionCacheSpec) and not layer.spec.is_mla:
            unified.append(replace(layer, page_size_bytes=page_max))
        else:
            raise NotImplementedError(f"cannot unify page of {layer.name} ({page} B) with {page_max} B")
    return unified


def uniform_type(layers: list[PagedLayer]) -> bool:
    """vLLM UniformTypeKVCacheSpecs: one kind, one window/chunk, one block size (pages may differ):
    such layers form one group whose block holds each layer's own page (a DSA model's MLA latents
    and indexer keys; MiniMax-M3's GQA K/V and index keys; Gemma 4's full layers of two head sizes without the hybrid manager)."""
    def type_key(layer: PagedLayer) -> tuple[object, ...]:
        spec = layer.spec
        if isinstance(spec, AttentionCacheSpec):
            # Not MLA-ness: vLLM's is_uniform_type takes every FullAttentionSpec subclass (MLAAttentionSpec
            # included) as one type, so MiniMax-M3's GQA K/V and its MLA-shaped index keys share a group.
            return (spec.kind, spec.window_len, spec.chunk_len, layer.block_size)
        return (spec.kind, layer.block_size)
    return len({type_key(layer) for layer in layers}) == 1


def bucket_by_spec(layers: list[PagedLayer]) -> list[list[PagedLayer]]:
    """Buckets of equal (spec, block size, page), in order of first appearance."""
    buckets: dict[tuple[LayerCacheSpec, int, int], list[PagedLayer]] = {}
    for layer in layers:
        buckets.setdefault(layer.bucket_key, []).append(layer)
    return list(buckets.values())


def split_strided(bucket: list[PagedLayer], group_size: int) -> list[list[PagedLayer]]:
    """cdiv(n, group_size) groups, group i = bucket[i::k]: keeps pipeline stages balanced."""
    num_groups = -(-len(bucket) // group_size)
    return [bucket[i::num_groups] for i in range(num_groups)]


def pp_stage_of(layer_idx: int, num_hidden_layers: int, pp: int) -> int:
    """Pipeline stage holding `layer_idx` (vLLM get_pp_indices: the remainder goes to the
    stages before the last, counting backwards)."""
    sizes = [num_hidden_layers // pp] * pp
    for i in range(2, num_hidden_layers % pp + 2):
        sizes[-i] += 1
    end = 0
    for stage, size in enumerate(sizes):
        end += size
        if layer_idx < end:
            return stage
    return pp - 1
