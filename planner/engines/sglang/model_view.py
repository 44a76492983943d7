"""A model as SGLang 0.5.23's pool sizing sees it, built from hkv's ModelSpec.

SGLang carries one attention shape per layer type (full, sliding) and counts layers by type; it
gives each hybrid recurrent layer one state slot per request. `sglang_model` reads those from the
spec's cache layers, or refuses the model in one line when SGLang does not serve it or hkv does
not reproduce how SGLang sizes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.cache_spec import CacheKind, CacheRole
from hkv.model_specs.layer_desc import AttentionDesc, RecurrentDesc
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.sglang.architectures import (
    DEFAULT_VISION_TOWER,
    DSV4_ARCHITECTURES,
    FAMILY_ARCHITECTURE,
    FORCED_ONE_POOL_ARCHITECTURES,
    HYBRID_SWA_ARCHITECTURES,
    KDA_ARCHITECTURES,
    MAMBA_EXTRA_BUFFER_ARCHITECTURES,
    MAMBA_RADIX_ARCHITECTURES,
    MLA_ARCHITECTURES,
    MULTIMODAL_ARCHITECTURES,
    MULTIMODAL_OFF_BY_DEFAULT,
    MULTIMODAL_PREFILL_GRAPH_ARCHITECTURES,
    SPARSE_INDEXER_ARCHITECTURES,
    UNSIZED_ARCHITECTURES,
    WINDOW_MINUS_ONE_ARCHITECTURES,
)
from hkv.planner.engines.sglang.config_extras import SglangConfigExtras
from hkv.planner.engines.sglang.served_architectures import SGLANG_ARCHITECTURES
from hkv.planner.errors import InvalidInputError

# Recurrent mixers whose state SGLang 0.5.23 sizes as hkv's RecurrentDesc describes it
# (configs/mamba_utils.py shapes: Mamba2, gated delta-net, KDA, LFM2's short conv).
SIZED_RECURRENT_VARIANTS = frozenset({"mamba2", "gdn", "kda", "short_conv"})
_SLIDING_KINDS = (CacheKind.SLIDING, CacheKind.CHUNKED)


@dataclass(frozen=True)
class HeadShape:
    """One layer type's K/V heads (whole model, before TP) and head sizes."""

    kv_heads: int
    head_dim: int
    v_head_dim: int

    def bytes_per_token(self, tp: int, kv_dtype_bytes: int) -> int:
        """K + V bytes of one token in one layer on one rank (model_config.get_num_kv_heads:
        at least one head per rank)."""
        return max(1, self.kv_heads // tp) * (self.head_dim + self.v_head_dim) * kv_dtype_bytes


@dataclass(frozen=True)
class SglangModel:
    """What SGLang sizes: `full_layers` layers of `full` heads (or an MLA latent of `mla_dim`
    elements), `indexer_layers` index keys of `indexer_elements` each (DSA: uint8 with the scale;
    MiniMax-M3's sparse layers: `sparse_indexer`, in the model's dtype), `swa_layers` layers of
    `swa` heads in a separate pool when `hybrid_swa`, and `recurrent` layers' states."""

    architecture: str
    context_len: int
    full_layers: int
    full: HeadShape | None  # None for MLA
    mla_dim: int | None  # kv_lora_rank + qk_rope_head_dim, SGLang's MLA backend
    indexer_layers: int
    indexer_elements: int  # one token's index key in one layer (DSA: bytes with the scale)
    sparse_indexer: bool  # MiniMax-M3's index keys (MiniMaxSparseKVPool), not DSA's
    hybrid_swa: bool
    swa_layers: int
    swa: HeadShape | None
    sliding_window: int | None
    recurrent: tuple[RecurrentDesc, ...]
    mamba_radix: bool  # the radix cache keeps recurrent states (else 3 slots per request regardless)
    mamba_extra_buffer: bool  # the "auto" radix strategy resolves to the extra buffer
    is_multimodal: bool  # served as multimodal (SGLang's is_multimodal)
    multimodal_prefill_graph: bool  # a multimodal model that keeps the breakable prefill graph
    vision_tower: tuple[int, int] | None  # (layers, hidden size) SGLang's mem_fraction_static cut reads
    kda: bool
    extras: SglangConfigExtras

    @property
    def is_mla(self) -> bool:
        return self.mla_dim is not None

    @property
    def is_dsa(self) -> bool:
        return self.indexer_layers > 0 and not self.sparse_indexer


def architecture_of(spec: ModelSpec) -> str:
    if spec.architectures:
        return spec.architectures[0]
    for family in (spec.family, spec.model_type):
        if family in FAMILY_ARCHITECTURE:
            return FAMILY_ARCHITECTURE[family]
    raise InvalidInputError(
        f"{spec.name}: the config names no architecture, so SGLang cannot pick a model class; add "
        f"`architectures` to config.json", fields=("model",))


def sglang_model(spec: ModelSpec, extras: SglangConfigExtras | None = None, *,
                 disable_hybrid_swa_memory: bool = False) -> SglangModel:
    """SGLang 0.5.23's view of `spec`; InvalidInputError naming the reason when SGLang does not
    serve the model or hkv does not reproduce its sizing."""
    extras = extras or SglangConfigExtras()
    arch = architecture_of(spec)
    if arch not in SGLANG_ARCHITECTURES:
        raise InvalidInputError(
            f"{spec.name}: SGLang 0.5.23 does not serve {arch} (no model class of its own; hkv does not size its "
            f"Transformers fallback, which refuses Falcon, Jamba, Bamba, OLMo-hybrid); plan it with the vllm engine",
            fields=("model", "engine"))
    if arch in UNSIZED_ARCHITECTURES:
        raise InvalidInputError(f"{spec.name}: {UNSIZED_ARCHITECTURES[arch]}; plan it with the vllm engine",
                                fields=("model", "engine"))
    if arch in DSV4_ARCHITECTURES:
        from hkv.planner.engines.sglang.dsv4_model import dsv4_sglang_model  # it builds on SglangModel

        return dsv4_sglang_model(spec, arch, extras)
    if arch in SPARSE_INDEXER_ARCHITECTURES and "nvfp4" in str((spec.quantization_config or {}).get("quant_method", "")):
        raise InvalidInputError(f"{spec.name}: MiniMax-M3's NVFP4 checkpoints use SGLang's packed Blackwell pool "
                                f"(minimax_m3_nvfp4_pool), which hkv does not size", fields=("model",))
    attention = [layer for layer in spec.cache_layers if isinstance(layer, AttentionDesc)]
    recurrent = tuple(layer for layer in spec.cache_layers if isinstance(layer, RecurrentDesc))
    _check_recurrent(spec, recurrent)
    kv_layers = [layer for layer in attention if layer.role is CacheRole.KV]
    indexers = [layer for layer in attention if layer.role is CacheRole.INDEXER]
    full = [layer for layer in kv_layers if layer.kind is CacheKind.FULL]
    sliding = [layer for layer in kv_layers if layer.kind in _SLIDING_KINDS]
    hybrid_swa = (bool(sliding) and arch in HYBRID_SWA_ARCHITECTURES and not disable_hybrid_swa_memory
                  and arch not in FORCED_ONE_POOL_ARCHITECTURES)
    if recurrent:
        full_count = len(full) + len(sliding)  # mambaish: the attention layers only
    elif hybrid_swa:
        full_count = len(full)
    else:
        full_count = spec.num_hidden_layers  # every layer, KV-shared ones too (num_effective_layers)
    base = full[0] if full else (kv_layers[0] if kv_layers else None)
    mla_dim = _mla_dim(spec, arch, base, extras)
    return SglangModel(
        architecture=arch,
        context_len=spec.max_model_len,
        full_layers=full_count if kv_layers else 0,
        full=None if mla_dim is not None or base is None else _one_shape(spec, "full", full or kv_layers),
        mla_dim=mla_dim,
        indexer_layers=len(indexers),
        indexer_elements=_one_width(spec, indexers),
        sparse_indexer=arch in SPARSE_INDEXER_ARCHITECTURES,
        hybrid_swa=hybrid_swa,
        swa_layers=len(sliding) if hybrid_swa else 0,
        swa=_one_shape(spec, "sliding", sliding) if hybrid_swa else None,
        sliding_window=_window(arch, sliding) if hybrid_swa else None,
        recurrent=recurrent,
        mamba_radix=arch in MAMBA_RADIX_ARCHITECTURES,
        mamba_extra_buffer=arch in MAMBA_EXTRA_BUFFER_ARCHITECTURES,
        is_multimodal=arch in MULTIMODAL_ARCHITECTURES and arch not in MULTIMODAL_OFF_BY_DEFAULT,
        multimodal_prefill_graph=arch in MULTIMODAL_PREFILL_GRAPH_ARCHITECTURES,
        vision_tower=extras.vision_tower or DEFAULT_VISION_TOWER.get(arch),
        kda=arch in KDA_ARCHITECTURES,
        extras=extras,
    )


def _check_recurrent(spec: ModelSpec, recurrent: tuple[RecurrentDesc, ...]) -> None:
    variants = sorted({layer.variant for layer in recurrent} - SIZED_RECURRENT_VARIANTS)
    if variants:
        raise InvalidInputError(
            f"{spec.name}: hkv does not size SGLang's state pool for {', '.join(variants)} layers; plan it "
            f"with the vllm engine", fields=("model", "engine"))
    shapes = {(layer.variant, layer.conv_kernel_len, layer.conv_dim, layer.ssm_heads, layer.ssm_dims)
              for layer in recurrent}
    if len(shapes) > 1:
        raise InvalidInputError(
            f"{spec.name}: SGLang keeps one state shape for every recurrent layer, this model has "
            f"{len(shapes)}", fields=("model",))


def _one_shape(spec: ModelSpec, kind: str, layers: list[AttentionDesc]) -> HeadShape:
    shapes = {HeadShape(layer.num_kv_heads, layer.head_dim, layer.head_dim_v or layer.head_dim) for layer in layers}
    if len(shapes) != 1:
        raise InvalidInputError(
            f"{spec.name}: its {kind} layers have {len(shapes)} head shapes; SGLang carries a single shape "
            f"per layer type", fields=("model",))
    return shapes.pop()


def _one_width(spec: ModelSpec, indexers: list[AttentionDesc]) -> int:
    widths = {layer.head_dim for layer in indexers}
    if len(widths) > 1:
        raise InvalidInputError(f"{spec.name}: index keys of {len(widths)} widths; SGLang sizes one",
                                fields=("model",))
    return widths.pop() if widths else 0


def _window(arch: str, sliding: list[AttentionDesc]) -> int | None:
    # SGLang's sliding_window_size: the model class's (window - 1 for some), else the config's window
    # or Llama 4's attention chunk.
    first = sliding[0]
    if first.window_len is None:
        return first.chunk_len
    return first.window_len - 1 if arch in WINDOW_MINUS_ONE_ARCHITECTURES else first.window_len


def _mla_dim(spec: ModelSpec, arch: str, base: AttentionDesc | None, extras: SglangConfigExtras) -> int | None:
    if arch not in MLA_ARCHITECTURES:
        return None
    if base is not None and base.is_mla:
        return base.head_dim  # hkv's latent page: kv_lora_rank + qk_rope_head_dim
    if extras.kv_lora_rank is None or extras.qk_rope_head_dim is None:
        raise InvalidInputError(
            f"{spec.name}: SGLang caches {arch}'s MLA latent (kv_lora_rank + qk_rope_head_dim) and hkv's spec "
            f"pages per-head K/V; read the model from its config.json so hkv sees kv_lora_rank",
            fields=("model",))
    return extras.kv_lora_rank + extras.qk_rope_head_dim
