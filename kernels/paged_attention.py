"""Triton kernel: paged attention for mixed prefill + decode batches (FlashAttention-style online softmax).

Layout (one attention layer, one step):

    query            [num_tokens, num_q_heads, head_dim]   all scheduled tokens, packed sequence by sequence
    key/value_cache  [num_blocks, block_size, num_kv_heads, head_dim]
    block_table      [num_seqs, max_blocks] int32 (int64 accepted): page ids of each sequence, logical order
    query_start_loc  [num_seqs + 1] cumulative: sequence i owns query rows query_start_loc[i] : [i + 1]
    seq_lens         [num_seqs] total context length, including this step's tokens
    sinks            optional [num_q_heads] learned logits (gpt-oss)
    out              [num_tokens, num_q_heads, head_dim] in query's dtype

Contract. The K/V of every token, the new ones included, are already in the cache (`store_kv` runs first).
Query row j of sequence i sits at absolute position p = seq_len - q_len + j and sees key position k iff
k <= p, and (window W) p - W < k, and (chunk C) k // C == p // C. Logits are q.k * scale, then
softcap * tanh(./softcap) when set; the sink, when given, is one more softmax column with no value
(it is neither scaled nor capped). Query head h reads KV head h // (num_q_heads // num_kv_heads).

Pages that only hold keys before the first visible key of the sequence's first query row
(`AttentionParams.first_visible_key`) may be null entries (page 0 or anything else): they are never
read. Every other page up to ceil(seq_len / block_size) must be valid; the wrapper does not read
seq_lens or block ids (no sync), so this is the caller's contract (`reference.py` checks it).

Kernel. Grid (query tiles, num_seqs, num_kv_heads). A program takes BLOCK_Q query tokens of one sequence
and all GROUP query heads of one KV head, flattened into BLOCK_M = BLOCK_Q * GROUP_PAD rows, so each
K/V tile loaded is shared by the whole GQA group. It walks key positions [lo, hi) in tiles of BLOCK_N
tokens, where lo is the first key visible to its first row and hi - 1 is its last row's position. A tile
may span several pages: each key's page id is gathered from the block table, so block_size is free.
Accumulation is fp32. When compiled, fp16/bf16 go to tl.dot in their own dtype (fp32 accumulate) and fp32
uses IEEE precision (no TF32); under the interpreter everything is upcast first, since its bf16
arithmetic is broken.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from hkv.kernels.checks import check_paged_attention_args, check_triton_launchable
from hkv.kernels.params import AttentionParams


@triton.jit
def _paged_attention_kernel(
    Q, K_cache, V_cache, Out, Block_table, Query_start_loc, Seq_lens, Sinks,  #
    scale, softcap,  #
    stride_qt, stride_qh, stride_qd,  #
    stride_kb, stride_ks, stride_kh, stride_kd,  #
    stride_vb, stride_vs, stride_vh, stride_vd,  #
    stride_ot, stride_oh, stride_od,  #
    stride_bts, stride_btb,  #
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr,  #
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr,  #
    BLOCK_Q: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_SIZE: tl.constexpr,  #
    SLIDING_WINDOW: tl.constexpr, CHUNK_SIZE: tl.constexpr,  # 0 = off
    USE_SOFTCAP: tl.constexpr, USE_SINKS: tl.constexpr,  #
    UPCAST: tl.constexpr, DOT_PRECISION: tl.constexpr,  # fp32 compute: "ieee", so no silent TF32
):
    q_tile = tl.program_id(0)
    seq = tl.program_id(1)
    kv_head = tl.program_id(2)
    q_start = tl.load(Query_start_loc + seq).to(tl.int64)
    q_len = (tl.load(Query_start_loc + seq + 1) - q_start).to(tl.int32)
    if q_tile * BLOCK_Q >= q_len:  # grid is sized for the longest query run
        return
    seq_len = tl.load(Seq_lens + seq).to(tl.int32)
    first_query_pos = seq_len - q_len

    BLOCK_M: tl.constexpr = BLOCK_Q * GROUP_PAD
    offs_m = tl.arange(0, BLOCK_M)
    offs_q = q_tile * BLOCK_Q + offs_m // GROUP_PAD  # query token within the sequence
    offs_g = offs_m % GROUP_PAD  # query head within the GQA group
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    row_valid = (offs_q < q_len) & (offs_g < GROUP)
    d_valid = offs_d < HEAD_DIM
    q_head = kv_head * GROUP + offs_g
    q_pos = first_query_pos + offs_q  # absolute positions, [BLOCK_M]

    # q: [BLOCK_M, HEAD_DIM_PAD]; it stays in registers for the whole key loop
    q_rows = Q + (q_start + offs_q)[:, None] * stride_qt + q_head[:, None] * stride_qh
    q_ptrs = q_rows + offs_d[None, :] * stride_qd
    q = tl.load(q_ptrs, mask=row_valid[:, None] & d_valid[None, :], other=0.0)
    if UPCAST:
        q = q.to(tl.float32)

    # key range of this tile: [lo, hi); keys before lo are invisible to every row, so their pages are skipped
    tile_first_pos = first_query_pos + q_tile * BLOCK_Q
    hi = first_query_pos + tl.minimum(q_tile * BLOCK_Q + BLOCK_Q, q_len)
    lo = tile_first_pos * 0
    if SLIDING_WINDOW > 0:
        lo = tl.maximum(lo, tile_first_pos - SLIDING_WINDOW + 1)
    if CHUNK_SIZE > 0:
        lo = tl.maximum(lo, (tile_first_pos // CHUNK_SIZE) * CHUNK_SIZE)

    # online-softmax state in log2 units; a sink starts the row as an extra column worth exp(sink)
    LOG2E: tl.constexpr = 1.4426950408889634
    if USE_SINKS:
        m_i = tl.load(Sinks + q_head, mask=offs_g < GROUP, other=0.0).to(tl.float32) * LOG2E
        l_i = tl.full([BLOCK_M], 1.0, dtype=tl.float32)
    else:
        # finite start, so a row with no visible key in a tile gives alpha = 1, p = 0 (never inf - inf)
        m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM_PAD], dtype=tl.float32)

    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)  # absolute key positions
        n_valid = offs_n < hi
        # -- gather page ids, then K^T [HEAD_DIM_PAD, BLOCK_N] and V [BLOCK_N, HEAD_DIM_PAD] ----
        table_ptrs = Block_table + seq * stride_bts + (offs_n // BLOCK_SIZE) * stride_btb
        block_ids = tl.load(table_ptrs, mask=n_valid, other=0).to(tl.int64)
        row_in_block = offs_n % BLOCK_SIZE
        k_tokens = block_ids * stride_kb + row_in_block * stride_ks + kv_head * stride_kh  # [BLOCK_N]
        v_tokens = block_ids * stride_vb + row_in_block * stride_vs + kv_head * stride_vh
        k_ptrs = K_cache + k_tokens[None, :] + offs_d[:, None] * stride_kd
        v_ptrs = V_cache + v_tokens[:, None] + offs_d[None, :] * stride_vd
        k = tl.load(k_ptrs, mask=n_valid[None, :] & d_valid[:, None], other=0.0)
        v = tl.load(v_ptrs, mask=n_valid[:, None] & d_valid[None, :], other=0.0)
        if UPCAST:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        # -- compute scores ----
        s = tl.dot(q, k, input_precision=DOT_PRECISION) * scale
        if USE_SOFTCAP:
            # tanh(x) = 1 - 2 / (exp(2x) + 1): saturates cleanly to +-1 at large |x|
            s = softcap * (1.0 - 2.0 / (tl.exp(2.0 * s / softcap) + 1.0))
        visible = (offs_n[None, :] <= q_pos[:, None]) & n_valid[None, :]
        if SLIDING_WINDOW > 0:
            visible = visible & (offs_n[None, :] > q_pos[:, None] - SLIDING_WINDOW)
        if CHUNK_SIZE > 0:
            visible = visible & ((offs_n[None, :] // CHUNK_SIZE) == (q_pos[:, None] // CHUNK_SIZE))
        s = tl.where(visible, s * LOG2E, float("-inf"))
        # -- update m_i, l_i, acc ----
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
        m_i = m_new

    # epilogue; padding rows can have no visible key (l_i = 0) and are not stored
    acc = acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None]
    o_rows = Out + (q_start + offs_q)[:, None] * stride_ot + q_head[:, None] * stride_oh
    o_ptrs = o_rows + offs_d[None, :] * stride_od
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=row_valid[:, None] & d_valid[None, :])


# No autotuning: max_query_len changes every step and each new value would re-tune. Fixed tiles instead:
# tl.dot needs every dim >= 16 when compiled, so BLOCK_M (query rows x GQA group) and BLOCK_N are >= 16;
# decode-only steps use the smallest row tile, prefill a larger one to reuse each K/V tile more.
_DECODE_BLOCK_M = 16
_PREFILL_BLOCK_M = 64


def _tile_sizes(max_query_len: int, group: int, head_dim_pad: int) -> tuple[int, int]:
    group_pad = triton.next_power_of_2(group)
    target_m = _DECODE_BLOCK_M if max_query_len <= 1 else _PREFILL_BLOCK_M
    block_q = min(max(1, target_m // group_pad), triton.next_power_of_2(max_query_len))
    block_q = max(block_q, -(-16 // group_pad))
    block_n = 64 if head_dim_pad <= 128 else 32
    return block_q, block_n


def paged_attention(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    params: AttentionParams,
    *,
    sinks: torch.Tensor | None = None,
    max_query_len: int | None = None,
) -> torch.Tensor:
    """Paged attention of every packed query token (Triton); returns [num_tokens, num_q_heads, head_dim].

    `max_query_len` (the longest run of query tokens of one sequence) sizes the grid; pass it to
    avoid a device sync, otherwise it is read from query_start_loc.
    """
    check_paged_attention_args(
        query, key_cache, value_cache, block_table, query_start_loc, seq_lens, params, sinks
    )
    named = {"query": query, "key_cache": key_cache, "value_cache": value_cache, "block_table": block_table}
    check_triton_launchable(_paged_attention_kernel, named)
    for name, tensor in (("query_start_loc", query_start_loc), ("seq_lens", seq_lens), ("sinks", sinks)):
        if tensor is not None and not tensor.is_contiguous():
            raise ValueError(f"{name} must be contiguous, got stride {tensor.stride()}")
    num_tokens, num_q_heads, head_dim = query.shape
    num_seqs, num_kv_heads = seq_lens.shape[0], key_cache.shape[2]
    out = torch.empty_like(query)
    if num_tokens == 0 or num_seqs == 0:
        return out
    if max_query_len is None:
        max_query_len = int((query_start_loc[1:] - query_start_loc[:-1]).max())
    if max_query_len < 1:
        raise ValueError(f"max_query_len must be >= 1 when there are query tokens, got {max_query_len}")

    group = num_q_heads // num_kv_heads
    head_dim_pad = max(16, triton.next_power_of_2(head_dim))
    block_q, block_n = _tile_sizes(max_query_len, group, head_dim_pad)
    grid = (triton.cdiv(max_query_len, block_q), num_seqs, num_kv_heads)
    interpreted = type(_paged_attention_kernel).__name__ == "InterpretedFunction"
    upcast = interpreted or query.dtype == torch.float32
    _paged_attention_kernel[grid](
        query, key_cache, value_cache, out, block_table, query_start_loc, seq_lens,  #
        sinks if sinks is not None else query,  # dummy pointer when USE_SINKS is off
        params.scale, params.softcap or 0.0,  #
        *query.stride(), *key_cache.stride(), *value_cache.stride(), *out.stride(), *block_table.stride(),  #
        HEAD_DIM=head_dim, HEAD_DIM_PAD=head_dim_pad,  #
        GROUP=group, GROUP_PAD=triton.next_power_of_2(group),  #
        BLOCK_Q=block_q, BLOCK_N=block_n, BLOCK_SIZE=key_cache.shape[1],  #
        SLIDING_WINDOW=params.sliding_window or 0, CHUNK_SIZE=params.chunk_size or 0,  #
        USE_SOFTCAP=params.softcap is not None, USE_SINKS=sinks is not None,  #
        UPCAST=upcast, DOT_PRECISION="ieee" if upcast else "tf32",  # "tf32" is moot for 16-bit operands
    )
    return out
