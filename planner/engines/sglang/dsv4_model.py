"""DeepSeek-V4 as SGLang 0.5.23's DSV4PoolConfigurator sizes it, read from hkv's ModelSpec.

SGLang reads, per pipeline stage (hkv: pp 1, the whole model), the config's `compress_ratios`
(0: a sliding window only, 4: the c4 pool with an indexer, 128: the c128 pool), the window
(`sliding_window`), the attention head (`head_dim` = qk_nope_head_dim + qk_rope_head_dim) and
the indexer's head (`index_head_dim`) (configs/model_config.py, the DeepseekV4ForCausalLM branch).
hkv's spec keeps them as its per-layer compressed caches (model_specs/compressed_attention.py):
the ratio is the `attn` cache's tokens_per_state, the head sizes are the fp32 compressor states'
widths (2 x coff x head_dim x 4 bytes), the window is the `swa_cache`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.compressed_attention import COMPRESSOR_STATE_DTYPE_BYTES, CompressedCacheDesc
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.sglang.config_extras import SglangConfigExtras
from hkv.planner.engines.sglang.model_view import SglangModel
from hkv.planner.errors import InvalidInputError

DSV4_MODEL_TYPE = "deepseek_v4"  # deepseek_v41 sizes its SWA pool from the request cap (not modeled)
NO_COMPRESSION = 0
C4_RATIO = 4
C128_RATIO = 128
# A compressor state's window is coff x ratio (coff 2 where the 4:1 compressor overlaps two windows).
_COFF_BY_STATE_WINDOW = {2 * C4_RATIO: 2, C128_RATIO: 1}


@dataclass(frozen=True)
class Dsv4Model:
    """The figures DSV4PoolConfigurator reads. `compress_ratios`: one per layer of the stage
    (0 where the layer keeps its window only)."""

    compress_ratios: tuple[int, ...]
    sliding_window: int
    head_dim: int  # qk_nope_head_dim + qk_rope_head_dim (SGLang's attn_head_dim)
    index_head_dim: int
    context_len: int

    @property
    def num_layers(self) -> int:
        return len(self.compress_ratios)

    def layers_of(self, ratio: int) -> int:
        """Layers owning `ratio`'s compressed storage (collect_sources_by_ratio: every layer of
        ratio 4 or 128)."""
        return sum(1 for r in self.compress_ratios if r == ratio)


def dsv4_model(spec: ModelSpec) -> Dsv4Model:
    """`spec` as DSV4PoolConfigurator reads it; InvalidInputError for a DeepSeek-V4 variant
    SGLang sizes otherwise."""
    if spec.model_type != DSV4_MODEL_TYPE:
        raise InvalidInputError(
            f"{spec.name}: model_type {spec.model_type!r}; hkv sizes SGLang's DeepSeek-V4 pools for "
            f"{DSV4_MODEL_TYPE!r} only (DeepSeek-V4.1 sizes its sliding pool from the request cap)",
            fields=("model",))
    caches = [layer for layer in spec.cache_layers if isinstance(layer, CompressedCacheDesc) and layer.spec]
    ratio_of: dict[int, int] = {}
    windows: set[int] = set()
    head_dims: set[int] = set()
    index_dims: set[int] = set()
    for cache in caches:
        assert cache.spec is not None
        module, ratio = cache.spec.module, cache.spec.tokens_per_state
        if module == "attn":
            ratio_of[cache.layer_idx] = ratio
        elif module == "swa_cache" and cache.spec.window_len is not None:
            windows.add(cache.spec.window_len)
        elif module.endswith("compressor.state_cache"):
            coff = _COFF_BY_STATE_WINDOW.get(cache.spec.window_len or 0, 0)
            width = cache.spec.state_bytes // (2 * coff * COMPRESSOR_STATE_DTYPE_BYTES) if coff else 0
            (index_dims if module.startswith("indexer.") else head_dims).add(width)
    if len(windows) != 1 or len(head_dims) != 1 or len(index_dims) > 1:
        raise InvalidInputError(
            f"{spec.name}: not a DeepSeek-V4 spec SGLang sizes (windows {sorted(windows)}, head sizes "
            f"{sorted(head_dims)}, indexer head sizes {sorted(index_dims)}: one each expected)", fields=("model",))
    ratios = tuple(ratio_of.get(i, NO_COMPRESSION) for i in range(spec.num_hidden_layers))
    unknown = sorted(set(ratios) - {NO_COMPRESSION, C4_RATIO, C128_RATIO})
    if unknown:
        raise InvalidInputError(f"{spec.name}: compression ratios {unknown}; hkv sizes SGLang's c4 and c128 "
                                f"pools only", fields=("model",))
    if C4_RATIO in ratios and not index_dims:
        raise InvalidInputError(f"{spec.name}: 4:1 layers without an indexer", fields=("model",))
    return Dsv4Model(ratios, windows.pop(), head_dims.pop(), index_dims.pop() if index_dims else 0,
                     spec.max_model_len)


def dsv4_sglang_model(spec: ModelSpec, architecture: str, extras: SglangConfigExtras) -> SglangModel:
    """The SglangModel the shared budget reads (mem_fraction_static, the multimodal cut): a
    hybrid SWA model, neither MLA nor multimodal; its pools come from dsv4_pools."""
    model = dsv4_model(spec)
    return SglangModel(
        architecture=architecture, context_len=model.context_len, full_layers=model.num_layers, full=None,
        mla_dim=None, indexer_layers=0, indexer_elements=0, sparse_indexer=False, hybrid_swa=True, swa_layers=model.num_layers, swa=None,
        sliding_window=model.sliding_window, recurrent=(), mamba_radix=False, mamba_extra_buffer=False,
        is_multimodal=False, multimodal_prefill_graph=False, vision_tower=None, kda=False, extras=extras)
