"""Triton kernel: write the new tokens' K/V into a paged KV cache through a slot mapping.

Layout (one attention layer):

    key, value              [num_tokens, num_kv_heads, head_dim]            new K/V of this step
    key_cache, value_cache  [num_blocks, block_size, num_kv_heads, head_dim] the layer's page pool
    slot_mapping            [num_tokens] int64 (int32 accepted)

Token t goes to page `slot // block_size`, row `slot % block_size`, where `slot = slot_mapping[t]`
(`slot = block_id * block_size + offset`). A negative slot marks a padding token: nothing is written.
Slots must be < num_blocks * block_size and distinct; the wrapper does not read slot values (no sync),
so that is the caller's contract (`reference.store_kv_reference` checks it).

Any strides are accepted as long as the last dim (head_dim) is unit-stride, so a cache may be a view
such as `kv[:, 0]` of a `[num_blocks, 2, block_size, heads, dim]` tensor. One program copies one token,
all heads at once.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from hkv.kernels.checks import check_store_kv_args, check_triton_launchable


@triton.jit
def _store_kv_kernel(
    Key, Value, Key_cache, Value_cache, Slot_mapping,  #
    stride_kt, stride_kh, stride_kd,  #
    stride_vt, stride_vh, stride_vd,  #
    stride_kcb, stride_kcs, stride_kch, stride_kcd,  #
    stride_vcb, stride_vcs, stride_vch, stride_vcd,  #
    NUM_KV_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr,  #
    HEADS_PAD: tl.constexpr, HEAD_DIM_PAD: tl.constexpr,  #
    BLOCK_SIZE: tl.constexpr,  #
):
    token = tl.program_id(0).to(tl.int64)
    slot = tl.load(Slot_mapping + token).to(tl.int64)
    if slot < 0:  # padding token
        return
    block_id = slot // BLOCK_SIZE
    offset = slot % BLOCK_SIZE

    offs_h = tl.arange(0, HEADS_PAD)
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    mask = (offs_h[:, None] < NUM_KV_HEADS) & (offs_d[None, :] < HEAD_DIM)
    # k, v: [HEADS_PAD, HEAD_DIM_PAD]; a pure copy, so bf16 needs no upcast even in the interpreter.
    k = tl.load(Key + token * stride_kt + offs_h[:, None] * stride_kh + offs_d[None, :] * stride_kd, mask)
    v = tl.load(Value + token * stride_vt + offs_h[:, None] * stride_vh + offs_d[None, :] * stride_vd, mask)
    k_dst = Key_cache + block_id * stride_kcb + offset * stride_kcs
    v_dst = Value_cache + block_id * stride_vcb + offset * stride_vcs
    tl.store(k_dst + offs_h[:, None] * stride_kch + offs_d[None, :] * stride_kcd, k, mask=mask)
    tl.store(v_dst + offs_h[:, None] * stride_vch + offs_d[None, :] * stride_vcd, v, mask=mask)


def store_kv(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Write key/value[t] into slot slot_mapping[t] of key/value_cache in place; skip negative slots."""
    check_store_kv_args(key, value, key_cache, value_cache, slot_mapping)
    named = {"key": key, "value": value, "key_cache": key_cache, "value_cache": value_cache}
    check_triton_launchable(_store_kv_kernel, named)
    if not slot_mapping.is_contiguous():
        raise ValueError(f"slot_mapping must be contiguous, got stride {slot_mapping.stride()}")
    num_tokens, num_kv_heads, head_dim = key.shape
    if num_tokens == 0:
        return
    _store_kv_kernel[(num_tokens,)](
        key, value, key_cache, value_cache, slot_mapping,  #
        *key.stride(), *value.stride(),  #
        *key_cache.stride(), *value_cache.stride(),  #
        NUM_KV_HEADS=num_kv_heads, HEAD_DIM=head_dim,  #
        HEADS_PAD=triton.next_power_of_2(num_kv_heads), HEAD_DIM_PAD=triton.next_power_of_2(head_dim),  #
        BLOCK_SIZE=key_cache.shape[1],  #
    )
