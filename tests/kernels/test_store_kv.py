"""store_kv: Triton kernel and torch reference against a per-token loop, padding slots included."""

from __future__ import annotations

import pytest
import torch

from hkv.kernels.torch_paged import store_kv_torch
from hkv.kernels import store_kv_cache, store_kv_reference
from hkv.kernels.store_kv import store_kv

NUM_BLOCKS, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM = 6, 4, 2, 16
SENTINEL = -7.0  # every slot not written must keep it
# 7 tokens, two of them padding; slots cross pages and land out of order
SLOTS = [5, -1, 0, 23, 9, -1, 14]


def make_inputs(dtype: torch.dtype, device: torch.device, slot_dtype: torch.dtype = torch.int64):
    gen = torch.Generator().manual_seed(0)
    key = torch.randn(len(SLOTS), NUM_KV_HEADS, HEAD_DIM, generator=gen).to(dtype).to(device)
    value = torch.randn(len(SLOTS), NUM_KV_HEADS, HEAD_DIM, generator=gen).to(dtype).to(device)
    shape = (NUM_BLOCKS, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)
    key_cache = torch.full(shape, SENTINEL, dtype=dtype, device=device)
    value_cache = torch.full(shape, SENTINEL, dtype=dtype, device=device)
    return key, value, key_cache, value_cache, torch.tensor(SLOTS, dtype=slot_dtype, device=device)


def expected_caches(key, value, key_cache, value_cache, slot_mapping):
    key_cache, value_cache = key_cache.clone().cpu(), value_cache.clone().cpu()
    for token, slot in enumerate(slot_mapping.tolist()):
        if slot >= 0:
            key_cache[slot // BLOCK_SIZE, slot % BLOCK_SIZE] = key[token].cpu()
            value_cache[slot // BLOCK_SIZE, slot % BLOCK_SIZE] = value[token].cpu()
    return key_cache, value_cache


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("slot_dtype", [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("impl", [store_kv, store_kv_reference, store_kv_torch], ids=["triton", "reference", "torch"])
def test_store_matches_loop(impl, dtype: torch.dtype, slot_dtype: torch.dtype, device: torch.device) -> None:
    key, value, key_cache, value_cache, slot_mapping = make_inputs(dtype, device, slot_dtype)
    want_k, want_v = expected_caches(key, value, key_cache, value_cache, slot_mapping)
    impl(key, value, key_cache, value_cache, slot_mapping)
    assert torch.equal(key_cache.cpu(), want_k)
    assert torch.equal(value_cache.cpu(), want_v)
    written = sum(s >= 0 for s in SLOTS) * NUM_KV_HEADS * HEAD_DIM
    assert (key_cache != SENTINEL).sum().item() == written  # padding tokens wrote nothing


@pytest.mark.parametrize("impl", [store_kv, store_kv_reference, store_kv_torch], ids=["triton", "reference", "torch"])
def test_store_into_strided_views(impl, device: torch.device) -> None:
    # one [num_blocks, 2, block_size, heads, dim] tensor per layer; K and V are views into it,
    # and key/value come as views of a fused qkv projection
    key, value, key_cache, value_cache, slot_mapping = make_inputs(torch.float16, device)
    pool = torch.stack([key_cache, value_cache], dim=1)
    fused = torch.cat([key, value], dim=1)  # [num_tokens, 2 * heads, dim]
    key_view, value_view = fused[:, :NUM_KV_HEADS], fused[:, NUM_KV_HEADS:]
    want_k, want_v = expected_caches(key, value, key_cache, value_cache, slot_mapping)
    impl(key_view, value_view, pool[:, 0], pool[:, 1], slot_mapping)
    assert torch.equal(pool[:, 0].cpu(), want_k)
    assert torch.equal(pool[:, 1].cpu(), want_v)


def test_all_padding_and_empty(device: torch.device) -> None:
    key, value, key_cache, value_cache, _ = make_inputs(torch.float32, device)
    store_kv(key, value, key_cache, value_cache, torch.full((len(SLOTS),), -1, device=device))
    store_kv(key[:0], value[:0], key_cache, value_cache, torch.zeros(0, dtype=torch.int64, device=device))
    assert (key_cache == SENTINEL).all() and (value_cache == SENTINEL).all()


@pytest.mark.parametrize("backend", ["torch", "triton"])
def test_dispatch(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HKV_ATTENTION", backend)
    key, value, key_cache, value_cache, slot_mapping = make_inputs(torch.float32, torch.device("cpu"))
    want_k, want_v = expected_caches(key, value, key_cache, value_cache, slot_mapping)
    store_kv_cache(key, value, key_cache, value_cache, slot_mapping)
    assert torch.equal(key_cache, want_k) and torch.equal(value_cache, want_v)


@pytest.mark.parametrize(
    ("positions", "bad", "message"),
    [
        ((0, 1), lambda t: t[:, :1], "does not match key_cache"),
        ((1,), lambda t: t[:3], "value shape"),
        ((0, 1, 2, 3), lambda t: t.double(), "key must have dtype"),
        ((2,), lambda t: t.half(), "key_cache dtype"),
        ((3,), lambda t: t[:2], "value_cache shape"),
        ((4,), lambda t: t[:3], "slot_mapping has 3 entries"),
        ((4,), lambda t: t.float(), "slot_mapping must have dtype"),
        ((2,), lambda t: t[0], "key_cache must be 4-D"),
    ],
)
@pytest.mark.parametrize("impl", [store_kv, store_kv_reference, store_kv_torch], ids=["triton", "reference", "torch"])
def test_bad_arguments_raise(impl, positions: tuple[int, ...], bad, message: str) -> None:
    args = list(make_inputs(torch.float32, torch.device("cpu")))
    for position in positions:
        args[position] = bad(args[position])
    with pytest.raises(ValueError, match=message):
        impl(*args)


def test_triton_rejects_strided_head_dim() -> None:
    key, value, key_cache, value_cache, slot_mapping = make_inputs(torch.float32, torch.device("cpu"))
    strided_key = torch.zeros(len(SLOTS), NUM_KV_HEADS, 2 * HEAD_DIM)[..., ::2]
    with pytest.raises(ValueError, match="key must be contiguous in its last dim"):
        store_kv(strided_key, value, key_cache, value_cache, slot_mapping)


def test_reference_rejects_out_of_range_slot() -> None:
    key, value, key_cache, value_cache, _ = make_inputs(torch.float32, torch.device("cpu"))
    slots = torch.tensor([0, 1, 2, 3, 4, 5, NUM_BLOCKS * BLOCK_SIZE])
    with pytest.raises(ValueError, match=f"slot {NUM_BLOCKS * BLOCK_SIZE} but the cache has"):
        store_kv_reference(key, value, key_cache, value_cache, slots)
