"""Pure-torch paged KV store and paged attention: the CPU path and the oracle for the Triton kernels.

Same contracts as `store_kv.py` and `paged_attention.py` (read their docstrings for the layouts).
Attention is vectorised per sequence: gather the visible pages by block table, build the explicit
visibility mask, softmax in fp32, cast the result to the input dtype. Only pages holding visible keys
are gathered, so null entries outside a window or chunk are never read. Unlike the Triton wrappers,
these functions also check tensor *values* (slots in range, block tables long enough), which syncs.
"""

from __future__ import annotations

import torch

from hkv.kernels.checks import check_paged_attention_args, check_store_kv_args
from hkv.kernels.params import AttentionParams


def store_kv_reference(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Write key/value[t] into slot slot_mapping[t] of key/value_cache in place; skip negative slots."""
    check_store_kv_args(key, value, key_cache, value_cache, slot_mapping)
    num_blocks, block_size = key_cache.shape[0], key_cache.shape[1]
    keep = slot_mapping >= 0
    slots = slot_mapping[keep].long()
    if slots.numel() == 0:
        return
    max_slot = int(slots.max())
    if max_slot >= num_blocks * block_size:
        raise ValueError(
            f"slot_mapping holds slot {max_slot} but the cache has {num_blocks * block_size} slots"
        )
    block_ids, offsets = slots // block_size, slots % block_size
    # Advanced-index assignment writes through any strides, so cache views stay views.
    key_cache[block_ids, offsets] = key[keep]
    value_cache[block_ids, offsets] = value[keep]


def visible_mask(query_pos: torch.Tensor, key_pos: torch.Tensor, params: AttentionParams) -> torch.Tensor:
    """Bool [num_queries, num_keys]: key_pos[k] is visible from query_pos[q] (causal + window + chunk)."""
    q, k = query_pos[:, None], key_pos[None, :]
    mask = k <= q
    if params.sliding_window is not None:
        mask &= k > q - params.sliding_window
    if params.chunk_size is not None:
        mask &= torch.div(k, params.chunk_size, rounding_mode="floor") == torch.div(
            q, params.chunk_size, rounding_mode="floor"
        )
    return mask


def paged_attention_reference(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    params: AttentionParams,
    *,
    sinks: torch.Tensor | None = None,
) -> torch.Tensor:
    """Attention of each packed query token over its sequence's paged K/V.

    Returns [num_tokens, num_q_heads, head_dim] in query's dtype.
    """
    check_paged_attention_args(
        query, key_cache, value_cache, block_table, query_start_loc, seq_lens, params, sinks
    )
    num_tokens, num_q_heads, head_dim = query.shape
    block_size, num_kv_heads = key_cache.shape[1], key_cache.shape[2]
    group = num_q_heads // num_kv_heads
    starts = query_start_loc.tolist()
    lens = seq_lens.tolist()
    rising = all(a <= b for a, b in zip(starts, starts[1:], strict=False))
    if starts[0] != 0 or starts[-1] != num_tokens or not rising:
        raise ValueError(
            f"query_start_loc must rise from 0 to num_tokens = {num_tokens}, "
            f"got {starts[:8]}{'...' if len(starts) > 8 else ''}"
        )
    out = torch.zeros_like(query)
    device = query.device
    for seq_id, seq_len in enumerate(lens):
        q_start, q_end = starts[seq_id], starts[seq_id + 1]
        q_len = q_end - q_start
        if q_len == 0:
            continue
        if seq_len < q_len:
            raise ValueError(f"sequence {seq_id}: seq_len {seq_len} < its {q_len} query tokens")
        num_blocks_needed = -(-seq_len // block_size)
        if num_blocks_needed > block_table.shape[1]:
            raise ValueError(
                f"sequence {seq_id}: seq_len {seq_len} needs {num_blocks_needed} blocks, "
                f"block_table has {block_table.shape[1]}"
            )
        first_query_pos = seq_len - q_len
        first_key = params.first_visible_key(first_query_pos)
        first_block = first_key // block_size
        block_ids = block_table[seq_id, first_block:num_blocks_needed].long()
        lo, hi = first_key - first_block * block_size, seq_len - first_block * block_size
        # k, v: [num_keys, num_kv_heads, head_dim], positions first_key .. seq_len - 1
        k = key_cache[block_ids].flatten(0, 1)[lo:hi].float()
        v = value_cache[block_ids].flatten(0, 1)[lo:hi].float()
        q = query[q_start:q_end].float().reshape(q_len, num_kv_heads, group, head_dim)

        logits = torch.einsum("qhgd,khd->hgqk", q, k) * params.scale
        if params.softcap is not None:
            logits = params.softcap * torch.tanh(logits / params.softcap)
        query_pos = torch.arange(first_query_pos, seq_len, device=device)
        key_pos = torch.arange(first_key, seq_len, device=device)
        logits = logits.masked_fill(~visible_mask(query_pos, key_pos, params), float("-inf"))
        if sinks is not None:
            # The sink is one more logit column with no value: it only enlarges the denominator.
            sink_col = sinks.float().view(num_kv_heads, group, 1, 1).expand(num_kv_heads, group, q_len, 1)
            probs = torch.softmax(torch.cat([logits, sink_col], dim=-1), dim=-1)[..., :-1]
        else:
            probs = torch.softmax(logits, dim=-1)
        o = torch.einsum("hgqk,khd->qhgd", probs, v)
        out[q_start:q_end] = o.reshape(q_len, num_q_heads, head_dim).to(query.dtype)
    return out
