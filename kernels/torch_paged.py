"""The fast torch path of paged attention (CPU, or CUDA without Triton): decodes batched.

Same contract as `paged_attention.py`. A step's one-token queries (decodes, most of a serving
step) are computed together: each row gathers exactly the slots of its visible keys (window and
chunk start included) by (page, offset) indexing, padded to the longest row by repeating its own
last key, which the mask then hides; no null page, unwritten slot or foreign page is ever read.
Multi-token queries (prefill chunks) go through SDPA one sequence at a time: with no mask where
the first visible key does not move (top-left causal for a fresh prefill; for a continued chunk,
the earlier keys unmasked and its own keys causal, merged by their log-sum-exps), else with a
mask in query tiles of a window or chunk; or through `paged_attention_reference` for softcap and
sinks, which SDPA lacks. The reference stays the oracle for all of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import numpy as np
import torch
import torch.nn.functional as F

from hkv.kernels.checks import check_paged_attention_args, check_store_kv_args
from hkv.kernels.params import AttentionParams
from hkv.kernels.reference import paged_attention_reference, visible_mask


def paged_attention_torch(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    params: AttentionParams,
    *,
    sinks: torch.Tensor | None = None,
    memo: dict[Any, Any] | None = None,
) -> torch.Tensor:
    """[num_tokens, num_q_heads, head_dim] in query's dtype (contract: `paged_attention.py`).

    `memo`: a dict the caller keeps for one step and one block table (every layer of a KV cache
    group); the argument checks run and the decode gather indices (which depend only on the
    tables, lengths, window and chunk) are computed by the first layer, and the others reuse
    them (mutated)."""
    def checked_split() -> _Split:  # every layer of a group gets the same shapes and tables: once
        check_paged_attention_args(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, params,
                                   sinks)
        return _split(query_start_loc, seq_lens, block_table)

    split = _memoized(memo, "split", checked_split)
    if split.prefill is None:
        return _decode(query, key_cache, value_cache,
                       _gather(block_table, seq_lens, params, key_cache.shape[1], memo), params, sinks, memo)
    if split.decode is None:
        return _prefill(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, params, sinks)
    # decodes batched, the other sequences through `_prefill`, outputs merged by row
    decode, prefill = split.decode, split.prefill
    result = torch.empty_like(query)
    gather = _gather(decode.block_table, decode.seq_lens, params, key_cache.shape[1], memo)
    result[decode.rows] = _decode(query[decode.rows], key_cache, value_cache, gather, params, sinks, memo)
    result[prefill.rows] = _prefill(query[prefill.rows], key_cache, value_cache, prefill.block_table,
                                    prefill.query_start_loc, prefill.seq_lens, params, sinks)
    return result


_T = TypeVar("_T")


def _memoized(memo: dict[Any, Any] | None, key: Any, compute: Callable[[], _T]) -> _T:
    """memo[key], computed on first use; every call computes when there is no memo. A memo
    lives for one step and one KV cache group (see `paged_attention_torch`)."""
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]  # type: ignore[no-any-return]


class _Part(NamedTuple):
    """Some sequences of a step as a batch of their own."""

    rows: torch.Tensor  # [tokens] int64: their query rows in the step
    block_table: torch.Tensor
    query_start_loc: torch.Tensor  # within `rows`
    seq_lens: torch.Tensor


class _Split(NamedTuple):
    """A step's one-token queries (decodes) and the others; None where a step has none."""

    decode: _Part | None
    prefill: _Part | None


def _split(query_start_loc: torch.Tensor, seq_lens: torch.Tensor, block_table: torch.Tensor) -> _Split:
    """The step's decodes and other sequences, from the host copy of its offsets (numpy: a few
    dozen entries, where each torch op's dispatch would cost more than the work)."""
    device, dtype = query_start_loc.device, query_start_loc.dtype
    starts = _host(query_start_loc).astype(np.int64)
    q_lens = np.diff(starts)
    is_decode = q_lens == 1
    if is_decode.all():
        return _Split(_Part(_on(starts[:-1], device), block_table, query_start_loc, seq_lens), None)
    if not is_decode.any():
        return _Split(None, _Part(torch.arange(int(starts[-1]), device=device), block_table, query_start_loc,
                                  seq_lens))
    decode, prefill = np.flatnonzero(is_decode), np.flatnonzero(~is_decode)
    sub_start = np.zeros(prefill.size + 1, dtype=np.int64)
    np.cumsum(q_lens[prefill], out=sub_start[1:])
    token_rows = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in prefill])
    decode_t, prefill_t = _on(decode, device), _on(prefill, device)
    return _Split(_Part(_on(starts[decode], device), block_table[decode_t],
                        _on(np.arange(decode.size + 1), device).to(dtype), seq_lens[decode_t]),
                  _Part(_on(token_rows, device), block_table[prefill_t], _on(sub_start, device).to(dtype),
                        seq_lens[prefill_t]))


def _host(tensor: torch.Tensor) -> np.ndarray:
    """A CPU tensor's numpy view (no copy); a device tensor's host copy (the torch path on CUDA
    is the fallback where Triton is absent)."""
    return (tensor if tensor.device.type == "cpu" else tensor.cpu()).numpy()


def _on(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """The array as a tensor on `device` (shares the array's memory on the CPU)."""
    return torch.from_numpy(array).to(device)


def _prefill(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor, block_table: torch.Tensor,
             query_start_loc: torch.Tensor, seq_lens: torch.Tensor, params: AttentionParams,
             sinks: torch.Tensor | None) -> torch.Tensor:
    """Multi-token queries, one sequence at a time: SDPA over the sequence's visible keys (gathered
    exactly, as the reference does), or the reference itself for softcap and sinks. Arguments
    already checked by the caller."""
    if sinks is not None or params.softcap is not None:
        return paged_attention_reference(query, key_cache, value_cache, block_table, query_start_loc, seq_lens,
                                         params, sinks=sinks)
    num_q_heads, head_dim = query.shape[1:]
    block_size, num_kv_heads = key_cache.shape[1], key_cache.shape[2]
    out = torch.empty_like(query)
    starts = query_start_loc.tolist()
    for seq_id, seq_len in enumerate(seq_lens.tolist()):
        q_start, q_end = starts[seq_id], starts[seq_id + 1]
        q_len = q_end - q_start
        if q_len == 0:
            continue
        if seq_len < q_len or -(-seq_len // block_size) > block_table.shape[1]:
            raise ValueError(f"sequence {seq_id}: seq_len {seq_len} does not fit its {q_len} queries and "
                             f"{block_table.shape[1]} blocks")
        first_query_pos = seq_len - q_len
        # A window or chunk that moves the first visible key within the sequence bounds what a
        # query sees: tiles of queries then read O(tile + W) keys each instead of the whole prefix.
        bounded = params.first_visible_key(seq_len - 1) != params.first_visible_key(first_query_pos)
        tile = _PREFILL_TILE if bounded else q_len
        for tile_start in range(first_query_pos, seq_len, tile):
            tile_end = min(seq_len, tile_start + tile)
            rows = slice(q_start + tile_start - first_query_pos, q_start + tile_end - first_query_pos)
            out[rows] = _prefill_tile(query[rows], key_cache, value_cache, block_table[seq_id], tile_start,
                                      tile_end, params, gqa=num_q_heads != num_kv_heads)
    return out


_PREFILL_TILE = 128  # queries per SDPA call where a window or chunk moves: keys read per query W + 127

# SDPA's CPU flash kernel, which also returns each query's log-sum-exp: two partial attentions
# over disjoint keys then merge exactly (the public SDPA returns no LSE).
_FLASH_WITH_LSE = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


def _prefill_tile(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor, table: torch.Tensor,
                  first_query_pos: int, seq_len: int, params: AttentionParams, *, gqa: bool) -> torch.Tensor:
    """Queries at positions [first_query_pos, seq_len) over their visible keys, read exactly."""
    block_size = key_cache.shape[1]
    first_key = params.first_visible_key(first_query_pos)
    first_block = first_key // block_size
    pages = table[first_block:-(-seq_len // block_size)].long()
    lo, hi = first_key - first_block * block_size, seq_len - first_block * block_size
    k = key_cache[pages].flatten(0, 1)[lo:hi].float().transpose(0, 1)[None]  # [1, Hkv, keys, D]
    v = value_cache[pages].flatten(0, 1)[lo:hi].float().transpose(0, 1)[None]
    q = query.float().transpose(0, 1)[None]  # [1, Hq, queries, D]
    num_prior = first_query_pos - first_key  # keys before the first query
    if params.first_visible_key(seq_len - 1) == first_key:  # every query sees from first_key to itself
        if num_prior == 0:  # queries and keys start together: SDPA's top-left causal is exact
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=params.scale, enable_gqa=gqa)
            return o[0].transpose(0, 1).to(query.dtype)
        if _FLASH_WITH_LSE is not None and q.device.type == "cpu":
            return _prior_then_causal(q, k, v, num_prior, params.scale)[0].transpose(0, 1).to(query.dtype)
    query_pos = torch.arange(first_query_pos, seq_len, device=query.device)
    key_pos = torch.arange(first_key, seq_len, device=query.device)
    mask = visible_mask(query_pos, key_pos, params)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=params.scale, enable_gqa=gqa)
    return o[0].transpose(0, 1).to(query.dtype)


def _prior_then_causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, num_prior: int,
                       scale: float) -> torch.Tensor:
    """Queries that see all `num_prior` earlier keys plus their own keys causally: the two parts
    unmasked and top-left causal, merged by their log-sum-exps (no [queries, keys] mask, and the
    upper triangle is skipped). q [1, Hq, Q, D], k/v [1, Hkv, num_prior + Q, D] -> [1, Hq, Q, D]."""
    assert _FLASH_WITH_LSE is not None
    out_prior, lse_prior = _FLASH_WITH_LSE(q, k[:, :, :num_prior], v[:, :, :num_prior], 0.0, False,
                                           attn_mask=None, scale=scale)
    out_own, lse_own = _FLASH_WITH_LSE(q, k[:, :, num_prior:], v[:, :, num_prior:], 0.0, True,
                                       attn_mask=None, scale=scale)
    top = torch.maximum(lse_prior, lse_own)  # finite: every query sees at least itself
    w_prior, w_own = (lse_prior - top).exp_(), (lse_own - top).exp_()
    total = w_prior + w_own
    return (out_prior * (w_prior / total)[..., None]).add_(out_own * (w_own / total)[..., None])


@dataclass(frozen=True)
class DecodeGather:
    """Where each decode row's visible keys are: slot (page, offset) per key, padded to the
    longest row by repeating the row's last key (hidden by `visible`)."""

    pages: torch.Tensor  # [B, width] int64
    offsets: torch.Tensor  # [B, width] int64
    visible: torch.Tensor  # [B, width] bool
    bias: torch.Tensor  # [B, 1, 1, width] float32: 0 where visible, -inf where hidden (SDPA's mask)


def _gather(block_table: torch.Tensor, seq_lens: torch.Tensor, params: AttentionParams, block_size: int,
            memo: dict[Any, Any] | None) -> DecodeGather:
    return _memoized(memo, ("decode", params.sliding_window, params.chunk_size),
                     lambda: decode_gather(block_table, seq_lens, params, block_size))


def decode_gather(block_table: torch.Tensor, seq_lens: torch.Tensor, params: AttentionParams,
                  block_size: int) -> DecodeGather:
    """The visible keys of one-token queries at positions seq_lens - 1 (ValueError for a length
    of 0 or a table too short). Computed on the host copy of the tables (numpy: [B, width]
    entries, once per step and group), returned on the tables' device."""
    device = block_table.device
    table = _host(block_table)
    lens = _host(seq_lens).astype(np.int64)
    if lens.size and int(lens.min()) < 1:
        raise ValueError("a decode sequence has seq_len 0")
    pos = lens - 1
    first_key = np.zeros_like(pos)
    if params.sliding_window is not None:
        first_key = np.maximum(first_key, pos - params.sliding_window + 1)
    if params.chunk_size is not None:
        first_key = np.maximum(first_key, pos // params.chunk_size * params.chunk_size)
    num_keys = pos - first_key + 1  # [B], visible keys of each row
    if pos.size and int(pos.max()) // block_size >= table.shape[1]:
        raise ValueError(f"seq_lens need {int(pos.max()) // block_size + 1} blocks, block_table has "
                         f"{table.shape[1]}")
    width = int(num_keys.max()) if num_keys.size else 0
    # key t of row b: position first_key + t, or (past the row's keys) its last key again, so every
    # gathered slot is a written one of the row's own pages; the repeats are masked out
    offsets = np.arange(width)
    visible = offsets[None, :] < num_keys[:, None]  # [B, width]
    key_pos = first_key[:, None] + np.minimum(offsets[None, :], (num_keys - 1)[:, None])
    pages = np.take_along_axis(table, key_pos // block_size, axis=1).astype(np.int64)
    # an additive float mask: SDPA's CPU kernel takes it faster than a boolean one
    bias = np.where(visible, np.float32(0), np.float32(-np.inf))
    return DecodeGather(_on(pages, device), _on(key_pos % block_size, device), _on(visible, device),
                        _on(bias, device)[:, None, None, :])


def store_kv_torch(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                   slot_mapping: torch.Tensor, memo: dict[Any, Any] | None = None) -> None:
    """`store_kv_reference`'s contract (negative slots skipped, slots checked in range), writing
    whole token rows with index_copy_ where the cache's strides allow (see `_rows_view`); the
    slots' pages and offsets, and their row index, are computed once per step and group through
    `memo` (mutated)."""
    tokens, pages, offsets = _memoized(
        memo, "store", lambda: _store_rows(key, value, key_cache, value_cache, slot_mapping))
    for cache, new in ((key_cache, key), (value_cache, value)):
        kept = new if tokens is None else new.index_select(0, tokens)
        view = _rows_view(cache)
        if view is None:
            cache[pages, offsets] = kept
            continue
        flat, rows_per_block = view
        index = _memoized(memo, ("store rows", rows_per_block), lambda: pages * rows_per_block + offsets)
        flat.index_copy_(0, index, kept)


def _store_rows(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                slot_mapping: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """The checked store: (the tokens kept, or None for all of them; their pages; their offsets),
    from the host copy of the slots."""
    check_store_kv_args(key, value, key_cache, value_cache, slot_mapping)
    device = slot_mapping.device
    slots = _host(slot_mapping).astype(np.int64)
    keep = slots >= 0
    kept_slots = slots[keep]
    num_blocks, block_size = key_cache.shape[:2]
    if kept_slots.size and int(kept_slots.max()) >= num_blocks * block_size:
        raise ValueError(f"slot_mapping holds slot {int(kept_slots.max())} but the cache has "
                         f"{num_blocks * block_size} slots")
    # None: every token is stored (no padding), the usual case
    tokens = None if keep.all() else _on(np.flatnonzero(keep), device)
    return tokens, _on(kept_slots // block_size, device), _on(kept_slots % block_size, device)


def _rows_view(cache: torch.Tensor) -> tuple[torch.Tensor, int] | None:
    """The cache as one row per token slot ([rows, Hkv, D], a strided view), and rows per block;
    None when a token's [Hkv, D] is not contiguous or pages are not a whole number of rows apart."""
    num_blocks, block_size, heads, dim = cache.shape
    s_block, s_token, s_head, s_dim = cache.stride()
    row = heads * dim
    if (s_dim, s_head, s_token) != (1, dim, row) or s_block % row:
        return None
    rows_per_block = s_block // row
    flat = cache.as_strided(((num_blocks - 1) * rows_per_block + block_size, heads, dim), (row, dim, 1),
                            cache.storage_offset())
    return flat, rows_per_block


def _gather_rows(cache: torch.Tensor, gather: DecodeGather, params: AttentionParams,
                 memo: dict[Any, Any] | None) -> torch.Tensor:
    """cache[pages, offsets] -> [B, width, Hkv, D]. Where a token's [Hkv, D] is contiguous and pages
    are a whole number of tokens apart (the pools' layout), read it as rows of one strided view
    with index_select, which copies row by row; else plain advanced indexing. The row index is
    computed once per step and layout of rows (`memo`, mutated)."""
    view = _rows_view(cache)
    if view is None:
        return cache[gather.pages, gather.offsets]
    flat, rows_per_block = view
    heads, dim = cache.shape[2:]
    index = _memoized(memo, ("rows", params.sliding_window, params.chunk_size, rows_per_block),  # as `_gather`'s
                      lambda: (gather.pages * rows_per_block + gather.offsets).flatten())
    return flat.index_select(0, index).view(*gather.pages.shape, heads, dim)


def _decode(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor, gather: DecodeGather,
            params: AttentionParams, sinks: torch.Tensor | None, memo: dict[Any, Any] | None) -> torch.Tensor:
    """query [B, Hq, D], one token per sequence -> [B, Hq, D]."""
    batch, num_q_heads, head_dim = query.shape
    num_kv_heads = key_cache.shape[2]
    group = num_q_heads // num_kv_heads
    visible = gather.visible
    k = _gather_rows(key_cache, gather, params, memo).float()  # [B, width, Hkv, D]
    v = _gather_rows(value_cache, gather, params, memo).float()
    if sinks is None and params.softcap is None:  # SDPA's fused kernel; same math, no cap, no sink
        # The q heads sharing a KV head go where SDPA expects query tokens ([B, Hkv, group, D]):
        # one query token sees every visible key, so no causal mask applies between them, and
        # no KV head is repeated.
        out = F.scaled_dot_product_attention(
            query.float().view(batch, num_kv_heads, group, head_dim), k.transpose(1, 2), v.transpose(1, 2),
            attn_mask=gather.bias, scale=params.scale)
        return out.reshape(batch, num_q_heads, head_dim).to(query.dtype)
    q = query.float().view(batch, num_kv_heads, group, head_dim)
    logits = torch.einsum("bhgd,bkhd->bhgk", q, k) * params.scale
    if params.softcap is not None:
        logits = params.softcap * torch.tanh(logits / params.softcap)
    logits = logits.masked_fill(~visible[:, None, None, :], float("-inf"))
    if sinks is not None:
        sink_col = sinks.float().view(1, num_kv_heads, group, 1).expand(batch, num_kv_heads, group, 1)
        probs = torch.softmax(torch.cat([logits, sink_col], dim=-1), dim=-1)[..., :-1]
    else:
        probs = torch.softmax(logits, dim=-1)
    out = torch.einsum("bhgk,bkhd->bhgd", probs, v)
    return out.reshape(batch, num_q_heads, head_dim).to(query.dtype)
