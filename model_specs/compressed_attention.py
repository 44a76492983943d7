"""DeepSeek-V4 compressed attention: the caches vLLM 0.32 keeps per layer, and their page bytes.

Each DeepSeek-V4 layer attends over a short sliding window of raw latents plus, on most layers, a
compressed history: one latent per `ratio` tokens (4:1 "compressed_sparse_attention", 128:1
"heavily_compressed_attention"). vLLM 0.32 caches, per layer (vllm/models/deepseek_v4/):

- `swa_cache`: the window's latents, a SlidingWindowMLASpec (window `sliding_window`, 128),
  64-token blocks whatever --block-size says (v1/attention/backends/mla/sparse_swa.py,
  DeepseekV4SWACache: block_size=64, state_content_bytes 584, alignment 576);
- `attn` (ratio > 1 only): the compressed latents, an MLAAttentionSpec at the cache block size with
  `tokens_per_state=ratio` (attention.py:856-880): a full-attention lifetime, ratio tokens per stored
  state;
- `compressor.state_cache` (ratio > 1): the compressor's fp32 running state, a SlidingWindowMLASpec of
  2 x coff x head_dim floats per token (kv + score; coff 2 for ratio 4, which overlaps windows, else
  1), window coff x ratio, block 4 (ratio 4) or 8 (ratio 128) (compressor.py:139-193, 267-272);
- on ratio-4 layers only, the lightning indexer (attention.py:907-923, 1009-1027): its compressed
  keys `indexer.k_cache` (MLAAttentionSpec, 128 fp8 + 4 B scale = 132 B per state, tokens_per_state
  4) and its own compressor's state `indexer.compressor.state_cache` (fp32, index_head_dim wide).

Under fp8_ds_mla (the FlashMLA path's format; --kv-cache-dtype fp8 and auto both resolve to it,
attention.py:93-122) a latent state is 584 B (448 B NoPE fp8 + 128 B RoPE bf16 + 8 B scales) and
every page of these five specs is padded up to a multiple of 576 B (kv_cache_interface.py,
_apply_alignment_padding); states per page = block_size / tokens_per_state.

A layer whose ratio is 0 or 1 (and the MTP layer) keeps the sliding window only.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer
from hkv.model_specs.layer_kinds import LayerKind, LayerTypeList

FP8_DS_MLA_STATE_BYTES = 584  # one latent: 448 NoPE fp8 + 64 x 2 RoPE bf16 + 8 scale bytes
FP8_DS_MLA_PAGE_ALIGNMENT = 576  # FlashMLA's packing stride; every DeepSeek-V4 page rounds up to it
SWA_BLOCK_LEN = 64  # DeepseekV4SWACache's default block, independent of --block-size
COMPRESSOR_BLOCK_LEN = {4: 4, 128: 8}  # CompressorStateCache: fixed by tensor sharing with KV blocks
COMPRESSOR_STATE_DTYPE_BYTES = 4  # fp32
INDEXER_QUANT_BLOCK_LEN = 128
INDEXER_SCALE_BYTES = 4
INDEXED_RATIO = 4  # only the 4:1 layers run sparse attention, hence an indexer
# transformers' DeepseekV4Config default for configs that name layers but give no rates.
DEFAULT_COMPRESS_RATES = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}


@dataclass(frozen=True)
class CompressedCacheSpec(AttentionCacheSpec):
    """One DeepSeek-V4 cache of one layer, an MLA-shaped page (one 'head', no V, replicated over TP)
    of `state_bytes` per stored state, each state covering `tokens_per_state` tokens. `kind` is its
    block lifetime (FULL: every block kept, SLIDING: blocks outside `window_len` freed); `block_len`
    a block size the engine fixes (None: the cache block size). A page holds
    block_size / tokens_per_state states, rounded up to `page_alignment` bytes. Its bytes do not
    follow --kv-cache-dtype (vLLM resolves DeepSeek-V4's cache to fp8_ds_mla)."""

    module: str = ""  # the module suffix vLLM registers it under: swa_cache, attn, indexer.k_cache, ...
    state_bytes: int = 0
    tokens_per_state: int = 1
    block_len: int | None = None
    page_alignment: int = FP8_DS_MLA_PAGE_ALIGNMENT

    def __post_init__(self) -> None:
        super().__post_init__()
        assert self.kind in (CacheKind.FULL, CacheKind.SLIDING) and self.state_bytes > 0 and self.module

    @property
    def bytes_per_token(self) -> int:
        """Bytes per token rounded up (a state covers tokens_per_state tokens); pages use page_size_bytes."""
        return -(-self.state_bytes // self.tokens_per_state)

    def page_size_bytes(self, block_size: int) -> int:
        assert block_size % self.tokens_per_state == 0, "a block holds whole states"
        raw = block_size // self.tokens_per_state * self.state_bytes
        return -(-raw // self.page_alignment) * self.page_alignment

    def ideal_bytes(self, seq_len: int) -> int:
        return -(-self.kept_len(seq_len) // self.tokens_per_state) * self.state_bytes


def cache_spec(module: str, kind: CacheKind, state_bytes: int, *, tokens_per_state: int = 1,
               window_len: int | None = None, block_len: int | None = None) -> CompressedCacheSpec:
    return CompressedCacheSpec(kind, 1, state_bytes, 0, 1, window_len=window_len, is_mla=True, module=module,
                               state_bytes=state_bytes, tokens_per_state=tokens_per_state, block_len=block_len)


@dataclass(frozen=True)
class CompressedCacheDesc(AttentionDesc):
    """A DeepSeek-V4 cache module of layer `layer_idx`; its spec is the same on every TP rank."""

    spec: CompressedCacheSpec | None = None

    @property
    def name(self) -> str:
        assert self.spec is not None
        return f"layers.{self.layer_idx}.{self.spec.module}"

    def cache_spec(self, opts: CacheOptions, *, engine_windows: bool = False) -> AttentionCacheSpec | None:
        return self.spec


def _desc(layer_idx: int, spec: CompressedCacheSpec) -> CompressedCacheDesc:
    return CompressedCacheDesc(layer_idx=layer_idx, kind=spec.kind, num_kv_heads=1, head_dim=spec.head_dim,
                               head_dim_v=0, window_len=spec.window_len, is_mla=True, spec=spec)


def compress_ratios(view: ConfigView) -> tuple[int, ...]:
    """Per-layer compression ratio (1: sliding window only): the checkpoint's `compress_ratios`
    (what vLLM reads; the MTP layers past num_hidden_layers are not in it), else transformers'
    `layer_types` through `compress_rates`."""
    num_layers = view.int_value("num_hidden_layers")
    ratios = view.get("compress_ratios")
    if ratios is None:
        types, rates = view.get("layer_types"), view.get("compress_rates")
        if not isinstance(types, list):
            raise InvalidConfigError("deepseek_v4: needs compress_ratios (or layer_types)")
        if not isinstance(rates, dict):
            view.note("compress_rates absent: 4:1 and 128:1 (DeepseekV4Config's defaults)")
            rates = DEFAULT_COMPRESS_RATES
        unknown = sorted({t for t in types if t not in rates and t != "sliding_attention"})
        if unknown:
            raise InvalidConfigError(f"deepseek_v4: layer_types {unknown} have no compress_rates entry; "
                                     f"expected sliding_attention or one of {sorted(rates)}")
        ratios = [rates.get(t, 1) for t in types]
    if not isinstance(ratios, list) or len(ratios) < num_layers:
        raise InvalidConfigError(f"deepseek_v4: compress_ratios must list {num_layers} layers")
    out = tuple(max(1, int(r)) for r in ratios[:num_layers])  # vLLM: max(1, compress_ratios[i])
    bad = sorted({r for r in out if r not in (1, *COMPRESSOR_BLOCK_LEN)})
    if bad:
        raise InvalidConfigError(f"deepseek_v4: compression ratio(s) {bad} not served by vLLM 0.32 "
                                 "(it compresses 4:1 or 128:1)")
    return out


def _latent_bytes(head_dim: int) -> int:
    if head_dim != 512:
        raise InvalidConfigError(f"deepseek_v4: head_dim {head_dim}; vLLM's fp8_ds_mla latent is 512 wide (584 B)")
    return FP8_DS_MLA_STATE_BYTES


def compressor_spec(module: str, ratio: int, head_dim: int) -> CompressedCacheSpec:
    coff = 2 if ratio == 4 else 1  # the 4:1 compressor overlaps two windows
    return cache_spec(module, CacheKind.SLIDING, 2 * coff * head_dim * COMPRESSOR_STATE_DTYPE_BYTES,
                      window_len=coff * ratio, block_len=COMPRESSOR_BLOCK_LEN[ratio])


def layer_caches(layer_idx: int, ratio: int, view: ConfigView) -> list[CompressedCacheDesc]:
    """One layer's caches in vLLM's registration order (the indexer is built first, then the
    window cache, the attention layer itself and its compressor)."""
    head_dim = view.int_value("head_dim")
    latent = _latent_bytes(head_dim)
    specs: list[CompressedCacheSpec] = []
    if ratio == INDEXED_RATIO:
        index_dim = view.int_value("index_head_dim")
        key_bytes = index_dim + index_dim // INDEXER_QUANT_BLOCK_LEN * INDEXER_SCALE_BYTES
        specs += [cache_spec("indexer.k_cache", CacheKind.FULL, key_bytes, tokens_per_state=ratio),
                  compressor_spec("indexer.compressor.state_cache", ratio, index_dim)]
    specs.append(cache_spec("swa_cache", CacheKind.SLIDING, latent, window_len=view.int_value("sliding_window"),
                            block_len=SWA_BLOCK_LEN))
    if ratio > 1:
        specs += [cache_spec("attn", CacheKind.FULL, latent, tokens_per_state=ratio),
                  compressor_spec("compressor.state_cache", ratio, head_dim)]
    return [_desc(layer_idx, spec) for spec in specs]


def compressed_layer_types(view: ConfigView, n: int) -> LayerTypeList:
    """DeepSeek-V4's layers as the kinds their caches live by: "compressed_attention" (a window
    plus compressed full-lifetime states) where the ratio is > 1, else "sliding_attention"."""
    ratios = compress_ratios(view)
    if len(ratios) != n:
        raise InvalidConfigError(f"deepseek_v4: {len(ratios)} compression ratios for {n} layers")
    return LayerTypeList("compress_ratios", tuple("compressed_attention" if r > 1 else "sliding_attention"
                                                  for r in ratios))


def compressed_cache_layers(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...],
                            model_dtype: int) -> tuple[CacheLayer, ...]:
    """Every cache of a DeepSeek-V4 config, in vLLM's registration order (fp8_ds_mla)."""
    return tuple(cache for i, ratio in enumerate(compress_ratios(view)) for cache in layer_caches(i, ratio, view))


def compressed_draft_layers(view: ConfigView, num_layers: int, count: int) -> tuple[CacheLayer, ...]:
    """The MTP layers' caches: vLLM builds them as DeepseekV4 decoder layers past num_hidden_layers,
    whose compression ratio is 1 (attention.py:233-235), so each caches its sliding window only."""
    return tuple(cache for i in range(count) for cache in layer_caches(num_layers + i, 1, view))
