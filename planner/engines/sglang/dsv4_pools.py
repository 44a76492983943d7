"""SGLang 0.5.23's DeepSeek-V4 pools (model_executor/pool_configurator.py DSV4PoolConfigurator),
on CUDA with its defaults: the FlashMLA backend's V4 page layout (SGLANG_DSV4_KV_LAYOUT v4), fp32
compressor states (SGLANG_DSV4_COMPRESS_STATE_DTYPE), no unified ring (HIP only), no HiSparse, no
online c128 compression, no speculative decoding, no encoder replay, ratio-sized sliding pool.

Per token of the full pool (floats, as SGLang computes them), with P the page (256) and a V4 page
of p slots taking ceil(584 p / 576) x 576 bytes (kv_layout.py KVLayout.V4.page_bytes):
  swa token   = page_bytes(P) / P x layers + 8 / P x (2 x 2 x head_dim + 2 x 2 x index_head_dim) x 4 x c4 layers
                (a c4 layer's compressor and indexer-compressor states ride on the sliding pool, a ring of 8 rows
                per sliding page)
  full token  = r x swa token
                + c4 layers x (1/4 x page_bytes(P/4) / (P/4) + 1/4 x (index_head_dim + index_head_dim/128 x 4))
                + c128 layers x 1/128 x page_bytes(P/128) / (P/128)
and a fixed bias, the c128 compressor states: 128 rows per request slot (max_running_requests + 1)
plus 129, padded to 128 rows, x 2 x head_dim x 4 bytes x c128 layers. Then
  full  = page_floor(int((available - bias) / full token)),  swa = page_floor(int(full x r)),
  c4 = full // 4,  c128 = full // 128,  c4_state = swa // P x 8,  c128_state = (max_running_requests + 1) x 128,
and SGLang refuses a sliding pool of at most window + P tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.sglang.dsv4_model import C4_RATIO, C128_RATIO, NO_COMPRESSION, Dsv4Model
from hkv.planner.engines.sglang.token_pools import page_floor
from hkv.planner.errors import DoesNotFitError
from hkv.planner.layout import cdiv
from hkv.planner.sizes import format_gib

V4_BYTES_PER_SLOT = 584  # KVLayout.V4: 448 fp8 nope + 64 bf16 rope + 7 ue8m0 scales + 1 pad
V4_PAGE_ALIGN = 576  # KVLayout.V4.page_align: the reader's TMA row stride
STATE_DTYPE_BYTES = 4  # SGLANG_DSV4_COMPRESS_STATE_DTYPE's default, float32
STATE_RING_ROWS = {C4_RATIO: 8, C128_RATIO: 128}  # get_compress_state_ring_size without draft tokens
C128_STATE_ROW_ALIGN = 128  # CompressStatePool pads its rows to the compress ratio
INDEXER_QUANT_BLOCK = 128  # one fp32 scale per 128 fp8 index-key elements
INDEXER_SCALE_BYTES = 4


def v4_page_bytes(slots: int) -> int:
    """Bytes of one V4-layout page of `slots` latent slots (padded to the TMA row stride)."""
    return cdiv(slots * V4_BYTES_PER_SLOT, V4_PAGE_ALIGN) * V4_PAGE_ALIGN


@dataclass(frozen=True)
class Dsv4PoolSizes:
    """DSV4PoolConfigurator's pools (its "DSV4 pool sizes" line) before finalize; `full` is
    SGLang's max_total_num_tokens, `swa` the sliding pool's tokens."""

    full: int
    swa: int
    c4: int
    c128: int
    c4_state: int


@dataclass(frozen=True)
class Dsv4Sizer:
    """One rank's DSV4PoolConfigurator. `max_running_requests`: the requested per-worker cap
    (SGLang's DeepSeek-V4 default 256), which sizes the c128 states' bias."""

    model: Dsv4Model
    page_size: int
    swa_ratio: float
    max_running_requests: int

    def paged_bytes_per_token(self, ratio: int = NO_COMPRESSION) -> float:
        """_get_paged_kv_bytes_per_token: a compressed pool's page holds page_size // ratio slots."""
        slots = self.page_size // ratio if ratio else self.page_size
        return v4_page_bytes(slots) / slots

    @property
    def indexer_bytes_per_token(self) -> int:
        """get_dsv4_indexer_bytes_per_token, fp8 keys with their scales."""
        dim = self.model.index_head_dim
        return dim + dim // INDEXER_QUANT_BLOCK * INDEXER_SCALE_BYTES

    @property
    def bytes_per_swa_token(self) -> float:
        c4_layers = self.model.layers_of(C4_RATIO)
        c4_state_bytes = 2 * 2 * self.model.head_dim * STATE_DTYPE_BYTES
        c4_indexer_state_bytes = 2 * 2 * self.model.index_head_dim * STATE_DTYPE_BYTES
        c4_state_ratio = (STATE_RING_ROWS[C4_RATIO] if c4_layers else 0) / self.page_size
        return (self.paged_bytes_per_token() * self.model.num_layers
                + c4_state_ratio * (c4_state_bytes + c4_indexer_state_bytes) * c4_layers)

    def compressed_bytes_per_full_token(self, ratio: int) -> float:
        if ratio == C4_RATIO:
            return 1 / 4 * self.paged_bytes_per_token(C4_RATIO) + 1 / 4 * self.indexer_bytes_per_token
        return 1 / C128_RATIO * self.paged_bytes_per_token(C128_RATIO)

    @property
    def bytes_per_full_token(self) -> float:
        """The coefficient SGLang logs as bytes_per_full_token (same float operations, same order)."""
        compressed: float = 0
        for ratio in (C4_RATIO, C128_RATIO):  # collect_sources_by_ratio's order
            if self.model.layers_of(ratio):
                compressed += self.compressed_bytes_per_full_token(ratio) * self.model.layers_of(ratio)
        return self.swa_ratio * self.bytes_per_swa_token + compressed

    @property
    def c128_state_fixed_bytes(self) -> int:
        layers = self.model.layers_of(C128_RATIO)
        if layers == 0:
            return 0
        ring = STATE_RING_ROWS[C128_RATIO]
        rows = (self.max_running_requests + 1) * ring + ring + 1
        rows = cdiv(rows, C128_STATE_ROW_ALIGN) * C128_STATE_ROW_ALIGN
        return rows * 2 * self.model.head_dim * STATE_DTYPE_BYTES * layers

    def full_tokens(self, available_bytes: int) -> int:
        """calculate_pool_sizes' full pool from the profiled rest (whole pages; V4 reserves no
        low-ratio padding pages)."""
        for_tokens = max(available_bytes - self.c128_state_fixed_bytes, 0)
        per_token = self.bytes_per_full_token
        full = page_floor(int(for_tokens / per_token), self.page_size)
        while full > 0 and full * per_token > for_tokens:
            full -= self.page_size
        return full

    def sizes(self, full_tokens: int) -> Dsv4PoolSizes:
        """_compute_dsv4_sizes; DoesNotFitError where SGLang refuses the sliding pool."""
        page = self.page_size
        full = page_floor(full_tokens, page)
        swa = page_floor(int(full * self.swa_ratio), page)
        if self.model.sliding_window + page >= swa:
            raise DoesNotFitError(
                f"SGLang's DeepSeek-V4 sliding pool ({swa:,} tokens) cannot hold one request (window "
                f"{self.model.sliding_window} + page {page}); raise --mem-fraction-static or "
                f"--swa-full-tokens-ratio, or lower --max-running-requests (its c128 states take "
                f"{format_gib(self.c128_state_fixed_bytes)})",
                fields=("mem_fraction_static", "swa_full_tokens_ratio", "max_running_requests"))
        c4_state = swa // page * (STATE_RING_ROWS[C4_RATIO] if self.model.layers_of(C4_RATIO) else 0)
        return Dsv4PoolSizes(full, swa, full // C4_RATIO, full // C128_RATIO, c4_state)

    def c128_state_rows(self, max_running_requests: int) -> int:
        """finalize_with_max_running_requests: the c128 state pool, a ring per request slot."""
        ring = STATE_RING_ROWS[C128_RATIO] if self.model.layers_of(C128_RATIO) else 0
        return (max_running_requests + 1) * ring


@dataclass(frozen=True)
class Dsv4Pools:
    """What DSV4PoolConfigurator worked out: the coefficient and bias it logs, the pools it
    sized from the rest (`from_budget`) and, under --max-total-tokens, the capped ones (`sizes`)."""

    sizer: Dsv4Sizer
    from_budget: Dsv4PoolSizes
    sizes: Dsv4PoolSizes
    c128_state: int  # rows of the c128 state pool after max_running_requests is known
