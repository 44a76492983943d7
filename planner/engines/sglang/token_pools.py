"""SGLang's token pools from the bytes left for KV (model_executor/pool_configurator.py).

One pool (DefaultPoolConfigurator): tokens = bytes // cell, rounded down to whole pages.
Hybrid SWA (HybridSWAPoolConfigurator), with F, S the full and sliding per-token cells and r =
swa_full_tokens_ratio:
  from 0.5.11  full = page_floor(bytes // (F + r S)), swa = page_floor(int(full x r))
  before       T = page_floor(bytes // (F + S)), full = page_floor(int(T (F + S) / (F + r S))),
               swa = page_floor(int(full x r))
and SGLang refuses a sliding pool that cannot hold one window plus a page. With
--max-running-requests and --disable-radix-cache (SWARequestCapPoolConfigurator) the sliding pool
is sized for that many requests instead and the full pool takes the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.sglang.cell_bytes import CellBytes
from hkv.planner.errors import DoesNotFitError
from hkv.planner.layout import cdiv

SWA_EVICTION_INTERVAL = 128  # SGLANG_SWA_EVICTION_INTERVAL's default


@dataclass(frozen=True)
class TokenPools:
    """Tokens per pool: `full` is SGLang's max_total_num_tokens; `swa` None without a sliding pool."""

    full: int
    swa: int | None


@dataclass(frozen=True)
class SwaSplit:
    """How SGLang splits bytes between the full and sliding pools."""

    ratio: float  # swa_full_tokens_ratio
    ratio_cell: bool  # 0.5.11's formula (else the older re-split)
    window: int | None  # SGLang's sliding_window_size, where it refuses a pool below window + page
    request_cap_tokens: int | None = None  # SWARequestCapPoolConfigurator's sliding pool, else None


def page_floor(tokens: int, page_size: int) -> int:
    return tokens // page_size * page_size


def one_pool(kv_bytes: int, cell: CellBytes, page_size: int, zero_cell_tokens: int) -> TokenPools:
    """DefaultPoolConfigurator; a model without KV layers gets `zero_cell_tokens` (its context)."""
    tokens = kv_bytes // cell.full if cell.full else zero_cell_tokens
    return TokenPools(page_floor(tokens, page_size), None)


def hybrid_swa_pools(kv_bytes: int, cell: CellBytes, page_size: int, split: SwaSplit) -> TokenPools:
    """The full and sliding pools of a hybrid SWA model from `kv_bytes`."""
    if split.request_cap_tokens is not None:
        swa = cdiv(split.request_cap_tokens, page_size) * page_size
        full = page_floor(int((kv_bytes - swa * cell.swa) // cell.full), page_size)
        if full <= 0:
            raise DoesNotFitError(
                f"SGLang's sliding pool for --max-running-requests ({swa:,} tokens) leaves no room for the full "
                f"pool; lower --max-running-requests or raise --mem-fraction-static",
                fields=("max_running_requests", "mem_fraction_static"))
        return TokenPools(full, swa)
    if cell.full_layers == 0:  # every layer slides: one pool, no ratio
        swa = page_floor(int(kv_bytes // cell.swa), page_size)
        return TokenPools(swa, swa)
    if split.ratio_cell:
        tokens = int(kv_bytes // (cell.full + split.ratio * cell.swa))
    else:
        both = cell.full + cell.swa
        tokens = page_floor(kv_bytes // both, page_size) * both / (cell.full + split.ratio * cell.swa)
    return capped_swa_pools(int(tokens), page_size, split)


def capped_swa_pools(full_tokens: int, page_size: int, split: SwaSplit) -> TokenPools:
    """`full_tokens` full-pool tokens and the sliding pool r times that (both whole pages)."""
    full = page_floor(full_tokens, page_size)
    swa = page_floor(int(full * split.ratio), page_size)
    if split.window is not None and split.window + page_size >= swa:
        raise DoesNotFitError(
            f"SGLang's sliding pool ({swa:,} tokens) cannot hold one window ({split.window:,}) plus a page; raise "
            f"--swa-full-tokens-ratio or the KV budget", fields=("swa_full_tokens_ratio", "mem_fraction_static"))
    return TokenPools(full, swa)


def swa_request_cap_tokens(window: int, page_size: int, max_running_requests: int, chunked_prefill_size: int,
                           draft_tokens: int = 1) -> int:
    """The sliding tokens `max_running_requests` requests hold at worst (compute_swa_request_cap,
    no speculative decoding, overlap scheduler on: two prefill chunks in flight)."""
    per_request = window + SWA_EVICTION_INTERVAL * draft_tokens + page_size + page_size
    return per_request * max(1, max_running_requests) + 2 * chunked_prefill_size + page_size
