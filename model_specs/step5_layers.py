"""Step5 (vLLM 0.33 `Step5ForCausalLM` / `Step5ForConditionalGeneration`): which layers attend how,
and the three caches each sparse (DSA) layer keeps.

vLLM 0.33 serves Step5 only from a checkpoint with a `sparse_config` section (models/step5/nvidia/
model.py l.1856-1860 raises "dense-only checkpoints are not supported"; config.py l.65-71). Layer i
(model.py l.226-236, l.456-466, l.889-914, l.1862-1920) reads:

- its type `layer_types_with_mtp[i]` (else `layer_types[i]`; without a list: even layers sliding,
  odd ones full, Step5Attention's default);
- KV heads `num_attention_groups` and `head_dim` (else hidden_size / heads), both replaced by
  `attention_other_setting`'s where its `attention_type` is the layer's type;
- a sliding window `sliding_window` on "sliding_attention" layers (none configured: full
  attention), whose query heads are `swa_num_attention_heads` (the KV cache does not change).

A layer is sparse when `sparse_config.enabled` (default true) and its type is "full_attention"
(`apply_to_layer_types`, config.py l.127-139: nothing else is accepted) and it has no window
(model.py l.1017). A sparse layer registers, in this order (model.py l.1166-1254):

- `attn`: the GQA K/V, a FullAttentionSpec of num_kv_heads / TP (at least 1) x 2 x head_dim at the
  --kv-cache-dtype; its backend STEP5_DSA declares the block-outermost layout BLNHC only and a
  block stride that is a multiple of the 8-token kernel page (sparse_attention.py l.822-826,
  l.889-893: `block_stride_alignment=MultipleOf(8)`); head_dim must be 192 (l.158-160);
- `attn.sparse_summary_cache`: one 256-byte fp8 summary per closed 8-token region, a
  FullAttentionSpec of 1 x 256 uint8 with tokens_per_state 8 at the cache block size
  (sparse_summary_cache.py l.143-154): block_size / 8 x 256 B per page, a full-attention lifetime,
  prefix cached; it buckets with the K/V (one uniform full-attention type) so it shares their block;
- `attn.csa_tail_ring`: the open region's raw bf16 [index_k | index_z] rows (1,024 B each), a
  CircularBufferSpec whose page is the K/V page of the same layer, i.e. page / 1,024 rows, at
  least 7 + num_speculative_tokens (csa_tail_ring.py l.166-188); one block per request for its
  whole life, never prefix cached (kv_cache_interface.py l.968-1004, single_type_kv_cache_manager.py
  l.1186-1271), block stride a multiple of 1,024 B.

Other layers keep a plain full or sliding-window K/V (FLASH_ATTN, Step5SplitKVFlashAttentionBackend).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from math import gcd
from typing import Any

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.family_sets import STEP5_FAMILIES as STEP5_FAMILIES
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer
from hkv.model_specs.layer_kinds import LayerKind, LayerTypeList

SUMMARY_STATE_BYTES = 256  # one fp8 region summary: 1 head x 256 uint8 (sparse_summary_cache.py l.147-154)
REGION_LEN = 8  # tokens per summary (tokens_per_state); sparse_config.region_block_size must be 8
RING_ROW_BYTES = 1024  # one bf16 [index_k | index_z] row: 2 x 256 x 2 B (csa_tail_ring.py l.23-25)
RING_BASE_ROWS = 7  # rows a region may still replay; + one per speculative token (csa_tail_ring.py l.160)
DSA_KERNEL_BLOCK_LEN = 8  # STEP5_DSA's MultipleOf(8) block stride (sparse_attention.py l.893)
DSA_HEAD_DIM = 192  # the only head size the Step5 DSA kernels take (sparse_attention.py l.158)
_SPARSE_CONSTANTS = {"proxy_dim": 256, "region_block_size": REGION_LEN}  # config.py l.140-147


@dataclass(frozen=True)
class SparseKVCacheSpec(AttentionCacheSpec):
    """A Step5 sparse layer's K/V: a full-attention page like any other, whose block stride
    STEP5_DSA wants a multiple of its 8-token kernel page."""

    def block_stride_alignment_bytes(self, block_size: int) -> int:
        """vLLM's get_block_stride_alignment for MultipleOf(8) (kv_cache_interface.py l.224-232):
        1 when the block is itself a kernel block, else the page of gcd(8, block) tokens."""
        kernel_len = gcd(DSA_KERNEL_BLOCK_LEN, block_size)
        return 1 if kernel_len == block_size else self.page_size_bytes(kernel_len)

    def as_full(self) -> AttentionCacheSpec:
        return self


@dataclass(frozen=True)
class SummaryCacheSpec(AttentionCacheSpec):
    """One `state_bytes` summary per `tokens_per_state` tokens, full-attention lifetime, paged at
    the cache block size (block_size / tokens_per_state states per page); uint8 whatever
    --kv-cache-dtype says."""

    state_bytes: int = SUMMARY_STATE_BYTES
    tokens_per_state: int = REGION_LEN

    @property
    def bytes_per_token(self) -> int:
        return self.state_bytes // self.tokens_per_state

    def page_size_bytes(self, block_size: int) -> int:
        assert block_size % self.tokens_per_state == 0, "a block holds whole regions"
        return block_size // self.tokens_per_state * self.state_bytes

    def ideal_bytes(self, seq_len: int) -> int:
        """Closed regions only: the open one's rows wait in the tail ring."""
        return seq_len // self.tokens_per_state * self.state_bytes

    def as_full(self) -> AttentionCacheSpec:
        return self


@dataclass(frozen=True)
class CircularBufferCacheSpec(AttentionCacheSpec):
    """A fixed ring per request in one block, whose page is its main layer's K/V page (so the
    geometry fields are the main layer's): page / row_bytes rows, of which `required_rows` must
    fit. Blocks per request: 1, for the request's whole life; never prefix cached."""

    row_bytes: int = RING_ROW_BYTES
    required_rows: int = RING_BASE_ROWS

    def __post_init__(self) -> None:
        super().__post_init__()
        assert self.kind is CacheKind.CIRCULAR and self.required_rows >= 1

    def capacity_rows(self, block_size: int) -> int:
        return self.page_size_bytes(block_size) // self.row_bytes

    def block_stride_alignment_bytes(self, block_size: int) -> int:
        return self.row_bytes  # csa_tail_ring.py l.187: block_stride_alignment=_ROW_BYTES

    def kept_len(self, seq_len: int) -> int:
        return 0  # no token positions: the ring is addressed by position % capacity

    def ideal_bytes(self, seq_len: int) -> int:
        return self.required_rows * self.row_bytes if seq_len else 0

    def as_full(self) -> AttentionCacheSpec:
        raise AssertionError("a circular buffer has no full-attention form (vLLM cannot promote it)")


class Step5Cache(str, Enum):
    KV = "attn"
    SUMMARY = "attn.sparse_summary_cache"
    RING = "attn.csa_tail_ring"


def _kv(desc: Step5CacheDesc, opts: CacheOptions) -> AttentionCacheSpec:
    return SparseKVCacheSpec(CacheKind.FULL, _heads(desc, opts), desc.head_dim, desc.head_dim, opts.kv_dtype_bytes)


def _summary(desc: Step5CacheDesc, opts: CacheOptions) -> AttentionCacheSpec:
    return SummaryCacheSpec(CacheKind.FULL, 1, SUMMARY_STATE_BYTES, 0, 1)


def _ring(desc: Step5CacheDesc, opts: CacheOptions) -> AttentionCacheSpec:
    return CircularBufferCacheSpec(CacheKind.CIRCULAR, _heads(desc, opts), desc.head_dim, desc.head_dim,
                                   opts.kv_dtype_bytes, required_rows=RING_BASE_ROWS + opts.speculative_tokens)


def _heads(desc: AttentionDesc, opts: CacheOptions) -> int:
    return max(1, desc.num_kv_heads // opts.tp)


_SPEC_OF: dict[Step5Cache, Callable[[Step5CacheDesc, CacheOptions], AttentionCacheSpec]] = {
    Step5Cache.KV: _kv, Step5Cache.SUMMARY: _summary, Step5Cache.RING: _ring}


@dataclass(frozen=True)
class Step5CacheDesc(AttentionDesc):
    """One of a sparse layer's three caches (`cache`); the geometry fields are the layer's K/V."""

    cache: Step5Cache = Step5Cache.KV

    @property
    def name(self) -> str:
        return f"layers.{self.layer_idx}.{self.cache.value}"

    def cache_spec(self, opts: CacheOptions, *, engine_windows: bool = False) -> AttentionCacheSpec | None:
        return _SPEC_OF[self.cache](self, opts)


@dataclass(frozen=True)
class _Layer:
    """Layer i as Step5Attention builds it."""

    kv_heads: int
    head_dim: int
    window_len: int | None
    sparse: bool


def _sparse_enabled(view: ConfigView) -> bool:
    """Whether sparse_config turns DSA on; refuses what vLLM's get_step5_sparse_config refuses
    and what would change the caches, naming the key."""
    for legacy in ("step5_sparse_config", "step3p5_sparse_config"):
        if view.get(legacy) is not None:
            raise InvalidConfigError(f"{legacy} is set; vLLM 0.33's Step5 reads the sparse layout from "
                                     "sparse_config only and refuses it (config.py l.55-62)")
    section = view.get("sparse_config")
    if section is None:
        raise InvalidConfigError(
            f"model_type {view.family!r} has no sparse_config section: vLLM 0.33 serves Step5 only from "
            "checkpoints that declare one (dense-only checkpoints are not supported), so hkv does not plan it")
    if not isinstance(section, dict):
        raise InvalidConfigError(f"sparse_config must be an object, got {type(section).__name__}")
    enabled = section.get("enabled", True)
    if not isinstance(enabled, bool):
        raise InvalidConfigError(f"sparse_config.enabled must be true or false, got {enabled!r}")
    if not enabled:
        return False
    for key, value in _SPARSE_CONSTANTS.items():
        if section.get(key) not in (None, "", value):
            raise InvalidConfigError(f"sparse_config.{key} is {section[key]!r}; vLLM 0.33's Step5 DSA requires {value}")
    _check_indexer(section)
    apply_to = section.get("apply_to_layer_types") or ["full_attention"]
    if [str(t).strip().lower() for t in apply_to if str(t).strip()] != ["full_attention"]:
        raise InvalidConfigError(f"sparse_config.apply_to_layer_types is {apply_to!r}; vLLM 0.33's Step5 DSA "
                                 "requires ['full_attention']")
    return True


def _check_indexer(section: dict[str, Any]) -> None:
    """The indexer settings vLLM 0.33 refuses at start-up (config.py l.79-83, l.148-177); they do not
    change any cache, but a config vLLM will not serve is not planned."""
    topk = int(section.get("topk") or 512)
    k_heads = int(section.get("sparse_indexer_num_k_heads") or 1)
    heads = int(section.get("sparse_indexer_num_heads") or 16)
    providers = int(section.get("index_tp_size") or section.get("num_provider_groups") or 4)
    problems = [
        ("softmax_variant" in section, "sets softmax_variant (vLLM reads sparse_indexer_softmax_variant)"),
        (not 1 <= topk <= 1024, f"topk {topk} is outside [1, 1024]"),
        (k_heads != 1, f"sparse_indexer_num_k_heads is {k_heads}, not 1"),
        (providers <= 0 or heads % providers or heads // providers not in (2, 4),
         f"sparse_indexer_num_heads / index_tp_size = {heads} / {providers} is not 2 or 4"),
    ]
    for failed, what in problems:
        if failed:
            raise InvalidConfigError(f"sparse_config {what}; vLLM 0.33's Step5 DSA refuses it")


def _raw_types(view: ConfigView) -> list[str]:
    raw = view.get("layer_types_with_mtp") or view.get("layer_types") or []
    if not isinstance(raw, list):
        raise InvalidConfigError(f"layer_types must be a list of layer-type strings, got {type(raw).__name__}")
    return [str(t) for t in raw]


def _layer(view: ConfigView, idx: int, types: list[str], sparse: bool) -> _Layer:
    """Step5DecoderLayer / Step5Attention's geometry of layer `idx` (module docstring)."""
    if types and idx >= len(types):
        raise InvalidConfigError(f"layer_types has {len(types)} entries but layer {idx} needs one")
    layer_type = types[idx] if types else ("sliding_attention" if idx % 2 == 0 else "full_attention")
    other: dict[str, Any] = view.get("attention_other_setting") or {}
    own = bool(other) and bool(types) and layer_type == other.get("attention_type")
    heads = (own and other.get("num_attention_heads")) or view.int_value("num_attention_heads")
    kv_heads = (own and other.get("num_attention_groups")) or view.int_value("num_attention_groups")
    head_dim = (own and other.get("head_dim")) or view.get("head_dim")
    window = view.get("sliding_window")
    sliding = layer_type == "sliding_attention" and window is not None
    if sliding and view.get("swa_num_attention_heads") is not None:
        heads = view.int_value("swa_num_attention_heads")
    head_dim = int(head_dim or view.int_value("hidden_size") // int(heads))
    is_sparse = sparse and not sliding and (types[idx] if idx < len(types) else "full_attention") == "full_attention"
    if is_sparse and head_dim != DSA_HEAD_DIM:
        raise InvalidConfigError(f"layer {idx} is a Step5 DSA layer of head_dim {head_dim}; vLLM 0.33's Step5 DSA "
                                 f"kernels require head_dim {DSA_HEAD_DIM}")
    if is_sparse and not view.get("use_head_wise_attn_gate"):
        raise InvalidConfigError("use_head_wise_attn_gate is false; vLLM 0.33's Step5 DSA layers require it true")
    return _Layer(int(kv_heads), head_dim, int(window) if sliding else None, is_sparse)


def step5_layer_types(view: ConfigView, n: int) -> LayerTypeList:
    """Each layer's attention as "sliding_attention" (a window is configured) or "full_attention"
    (sparse or plain); the sparse layers' summary and ring come from `step5_cache_layers`."""
    sparse, types = _sparse_enabled(view), _raw_types(view)
    return LayerTypeList("layer_types", tuple(
        "full_attention" if _layer(view, i, types, sparse).window_len is None else "sliding_attention"
        for i in range(n)))


def _layer_caches(view: ConfigView, idx: int, types: list[str], sparse: bool) -> list[CacheLayer]:
    layer = _layer(view, idx, types, sparse)
    kind = CacheKind.FULL if layer.window_len is None else CacheKind.SLIDING
    if not layer.sparse:
        return [AttentionDesc(layer_idx=idx, kind=kind, num_kv_heads=layer.kv_heads, head_dim=layer.head_dim,
                              head_dim_v=layer.head_dim, window_len=layer.window_len)]
    return [Step5CacheDesc(layer_idx=idx, kind=CacheKind.CIRCULAR if cache is Step5Cache.RING else kind,
                           num_kv_heads=layer.kv_heads, head_dim=layer.head_dim, head_dim_v=layer.head_dim,
                           cache=cache) for cache in Step5Cache]


def step5_cache_layers(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...],
                       model_dtype: int) -> tuple[CacheLayer, ...]:
    """Every layer's caches in vLLM's registration order (attn, then a sparse layer's summary
    and ring)."""
    sparse, types = _sparse_enabled(view), _raw_types(view)
    return tuple(cache for i in range(len(kinds)) for cache in _layer_caches(view, i, types, sparse))


def step5_draft_layers(view: ConfigView, num_layers: int, count: int) -> tuple[CacheLayer, ...]:
    """The MTP layers (Step5MTP builds Step5DecoderLayers at num_hidden_layers + i, mtp.py
    l.179-194), typed by `layer_types_with_mtp`; () with a note when the config lists no type for them."""
    sparse, types = _sparse_enabled(view), _raw_types(view)
    if types and len(types) < num_layers + count:
        view.note(f"layer_types names no type for the {count} MTP layer(s): their caches are left out")
        return ()
    return tuple(cache for i in range(num_layers, num_layers + count)
                 for cache in _layer_caches(view, i, types, sparse))
