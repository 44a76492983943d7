"""Paged attention: Triton kernel vs torch reference vs a naive fp64 oracle on dense, un-paged K/V.

Every batch is built so that misuse shows up as NaN: the pool starts as NaN, page 0 is the null page,
pages wholly before a sequence's first visible key are left as 0 in the block table and never written.
Shapes are tiny (head_dim 16, block_size 4, <= ~70 tokens) because the Triton interpreter is slow.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

from hkv.kernels import AttentionParams, paged_attention_forward, paged_attention_reference
from hkv.kernels.torch_paged import paged_attention_torch
from hkv.kernels.checks import check_triton_launchable
from hkv.kernels.paged_attention import paged_attention

HEAD_DIM = 16
BLOCK_SIZE = 4
TOLERANCES = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}


@dataclass
class Batch:
    query: torch.Tensor  # [num_tokens, num_q_heads, head_dim]
    key_cache: torch.Tensor  # [num_blocks, block_size, num_kv_heads, head_dim]
    value_cache: torch.Tensor
    block_table: torch.Tensor  # [num_seqs, max_blocks]
    query_start_loc: torch.Tensor  # [num_seqs + 1]
    seq_lens: torch.Tensor  # [num_seqs]
    dense_keys: list[torch.Tensor]  # per sequence [seq_len, num_kv_heads, head_dim], un-paged
    dense_values: list[torch.Tensor]
    sinks: torch.Tensor | None

    def args(self) -> tuple[torch.Tensor, ...]:
        return (
            self.query,
            self.key_cache,
            self.value_cache,
            self.block_table,
            self.query_start_loc,
            self.seq_lens,
        )


def make_batch(
    q_lens: list[int],
    seq_lens: list[int],
    *,
    num_q_heads: int = 4,
    num_kv_heads: int = 2,
    dtype: torch.dtype = torch.float32,
    params: AttentionParams,
    sinks: bool = False,
    seed: int = 0,
    index_dtype: torch.dtype = torch.int32,
) -> Batch:
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(dtype)

    blocks_per_seq = [-(-n // BLOCK_SIZE) for n in seq_lens]
    num_blocks = 1 + sum(blocks_per_seq) + 3  # page 0 is the null page; 3 spare pages stay NaN
    key_cache = torch.full((num_blocks, BLOCK_SIZE, num_kv_heads, HEAD_DIM), float("nan"), dtype=dtype)
    value_cache = torch.full_like(key_cache, float("nan"))
    block_table = torch.zeros(
        len(seq_lens), max(blocks_per_seq) + 2, dtype=index_dtype
    )  # + 2 padding entries
    free_pages = (torch.randperm(num_blocks - 1, generator=gen) + 1).tolist()
    dense_keys, dense_values = [], []
    for seq_id, (q_len, seq_len) in enumerate(zip(q_lens, seq_lens, strict=True)):
        k, v = randn(seq_len, num_kv_heads, HEAD_DIM), randn(seq_len, num_kv_heads, HEAD_DIM)
        dense_keys.append(k)
        dense_values.append(v)
        first_live_block = params.first_visible_key(seq_len - q_len) // BLOCK_SIZE
        for b in range(first_live_block, blocks_per_seq[seq_id]):
            page = free_pages.pop()
            block_table[seq_id, b] = page
            rows = slice(b * BLOCK_SIZE, min((b + 1) * BLOCK_SIZE, seq_len))
            key_cache[page, : rows.stop - rows.start] = k[rows]
            value_cache[page, : rows.stop - rows.start] = v[rows]
    query_start_loc = torch.tensor([0, *torch.tensor(q_lens).cumsum(0).tolist()], dtype=index_dtype)
    return Batch(
        query=randn(sum(q_lens), num_q_heads, HEAD_DIM),
        key_cache=key_cache,
        value_cache=value_cache,
        block_table=block_table,
        query_start_loc=query_start_loc,
        seq_lens=torch.tensor(seq_lens, dtype=index_dtype),
        dense_keys=dense_keys,
        dense_values=dense_values,
        sinks=torch.randn(num_q_heads, generator=gen) if sinks else None,
    )


def naive_attention(batch: Batch, params: AttentionParams) -> torch.Tensor:
    """fp64, one query token at a time over the dense K/V, mask written out from the definitions."""
    num_q_heads, num_kv_heads = batch.query.shape[1], batch.dense_keys[0].shape[1] if batch.dense_keys else 1
    group = num_q_heads // num_kv_heads
    out = torch.zeros(batch.query.shape, dtype=torch.float64)
    starts = batch.query_start_loc.tolist()
    for seq_id, seq_len in enumerate(batch.seq_lens.tolist()):
        k = batch.dense_keys[seq_id].double().repeat_interleave(group, dim=1)  # [seq_len, num_q_heads, d]
        v = batch.dense_values[seq_id].double().repeat_interleave(group, dim=1)
        q_len = starts[seq_id + 1] - starts[seq_id]
        for j in range(q_len):
            pos = seq_len - q_len + j
            keys = torch.arange(seq_len)
            visible = keys <= pos
            if params.sliding_window is not None:
                visible &= keys > pos - params.sliding_window
            if params.chunk_size is not None:
                visible &= keys // params.chunk_size == pos // params.chunk_size
            q = batch.query[starts[seq_id] + j].double()  # [num_q_heads, d]
            logits = torch.einsum("hd,khd->hk", q, k) * params.scale
            if params.softcap is not None:
                logits = params.softcap * torch.tanh(logits / params.softcap)
            logits[:, ~visible] = float("-inf")
            if batch.sinks is not None:
                logits = torch.cat([logits, batch.sinks.double()[:, None]], dim=1)
            probs = torch.softmax(logits, dim=1)[:, :seq_len]
            out[starts[seq_id] + j] = torch.einsum("hk,khd->hd", probs, v)
    return out


def to_device(batch: Batch, device: torch.device) -> Batch:
    moved = {
        name: getattr(batch, name).to(device)
        for name in ("query", "key_cache", "value_cache", "block_table", "query_start_loc", "seq_lens")
    }
    sinks = batch.sinks.to(device) if batch.sinks is not None else None
    return Batch(**moved, dense_keys=batch.dense_keys, dense_values=batch.dense_values, sinks=sinks)


def check_all_agree(batch: Batch, params: AttentionParams, device: torch.device) -> None:
    atol = TOLERANCES[batch.query.dtype]
    expected = naive_attention(batch, params)
    reference = paged_attention_reference(*batch.args(), params, sinks=batch.sinks)
    fast = paged_attention_torch(*batch.args(), params, sinks=batch.sinks)
    on_device = to_device(batch, device)
    triton_out = paged_attention(*on_device.args(), params, sinks=on_device.sinks).cpu()
    for name, got in (("reference", reference), ("torch", fast), ("triton", triton_out)):
        assert got.dtype == batch.query.dtype and got.shape == batch.query.shape, name
        assert not got.isnan().any(), f"{name} produced NaN: a null or unwritten page was read"
        torch.testing.assert_close(
            got.double(), expected, atol=atol, rtol=0, msg=lambda m, name=name: f"{name}: {m}"
        )
    torch.testing.assert_close(triton_out.double(), reference.double(), atol=atol, rtol=0)
    torch.testing.assert_close(fast.double(), reference.double(), atol=atol, rtol=0)


# A mixed step: a fresh 13-token prefill, two decodes, a 5-token prefill chunk on top of 17 cached tokens.
MIXED_Q_LENS = [13, 1, 1, 5]
MIXED_SEQ_LENS = [13, 29, 7, 22]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_mixed_batch_gqa(dtype: torch.dtype, device: torch.device) -> None:
    params = AttentionParams(scale=HEAD_DIM**-0.5)
    check_all_agree(make_batch(MIXED_Q_LENS, MIXED_SEQ_LENS, dtype=dtype, params=params), params, device)


@pytest.mark.parametrize(
    ("num_q_heads", "num_kv_heads"), [(2, 2), (4, 1), (6, 2)], ids=["mha", "mqa", "group3"]
)
def test_head_layouts(num_q_heads: int, num_kv_heads: int, device: torch.device) -> None:
    params = AttentionParams(scale=0.3)
    batch = make_batch(
        [6, 1, 3], [6, 11, 9], num_q_heads=num_q_heads, num_kv_heads=num_kv_heads, params=params, seed=1
    )
    check_all_agree(batch, params, device)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_sliding_window_never_reads_null_pages(dtype: torch.dtype, device: torch.device) -> None:
    params = AttentionParams(scale=HEAD_DIM**-0.5, sliding_window=6)
    batch = make_batch([1, 9, 1, 4], [41, 9, 23, 30], dtype=dtype, params=params, seed=2)
    assert (batch.block_table[0, :8] == 0).all(), "the test must put null pages in the table"
    check_all_agree(batch, params, device)


def test_chunked_local(device: torch.device) -> None:
    params = AttentionParams(scale=HEAD_DIM**-0.5, chunk_size=8)
    # decode at position 37 sees chunk 32..37; the 12-token prefill chunk spans chunks 8..15 and 16..23
    batch = make_batch([1, 12, 5], [38, 22, 5], params=params, seed=3)
    assert (batch.block_table[0, :8] == 0).all()
    check_all_agree(batch, params, device)


def test_softcap(device: torch.device) -> None:
    params = AttentionParams(scale=1.0, softcap=3.0)  # scale 1 pushes logits into the saturated tanh range
    check_all_agree(make_batch(MIXED_Q_LENS, MIXED_SEQ_LENS, params=params, seed=4), params, device)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_sinks_with_sliding_window(dtype: torch.dtype, device: torch.device) -> None:
    params = AttentionParams(scale=HEAD_DIM**-0.5, sliding_window=8)  # gpt-oss: sinks on window layers
    batch = make_batch([1, 7, 1], [30, 19, 3], dtype=dtype, params=params, sinks=True, seed=5)
    check_all_agree(batch, params, device)


def test_sinks_alone(device: torch.device) -> None:
    params = AttentionParams(scale=HEAD_DIM**-0.5)
    check_all_agree(
        make_batch(MIXED_Q_LENS, MIXED_SEQ_LENS, params=params, sinks=True, seed=6), params, device
    )


def test_long_rows_span_several_tiles(device: torch.device) -> None:
    # 64 prefill tokens need two query tiles; a decode at position 69 needs two key tiles.
    params = AttentionParams(scale=HEAD_DIM**-0.5, softcap=20.0)
    check_all_agree(make_batch([64, 1], [64, 70], params=params, seed=7), params, device)


def test_decode_only_and_empty_sequence(device: torch.device) -> None:
    params = AttentionParams(scale=HEAD_DIM**-0.5, sliding_window=5)
    # the middle sequence has no token scheduled this step
    check_all_agree(make_batch([1, 0, 1], [18, 9, 2], params=params, seed=8), params, device)


def test_strided_cache_view_and_int64_indices(device: torch.device) -> None:
    params = AttentionParams(scale=HEAD_DIM**-0.5)
    batch = make_batch(MIXED_Q_LENS, MIXED_SEQ_LENS, params=params, seed=9, index_dtype=torch.int64)
    # a [num_blocks, 2, block_size, heads, dim] pool, caches as non-contiguous views kv[:, 0] / kv[:, 1]
    pool = torch.stack([batch.key_cache, batch.value_cache], dim=1)
    batch.key_cache, batch.value_cache = pool[:, 0], pool[:, 1]
    assert not batch.key_cache.is_contiguous()
    check_all_agree(batch, params, device)


def test_oracle_matches_sdpa() -> None:
    # the oracle itself against torch's SDPA with an explicit mask (no softcap / sinks there)
    params = AttentionParams(scale=0.2, sliding_window=7)
    batch = make_batch([10, 1], [10, 16], params=params, seed=10)
    expected = naive_attention(batch, params)
    starts = batch.query_start_loc.tolist()
    for seq_id, seq_len in enumerate(batch.seq_lens.tolist()):
        q = batch.query[starts[seq_id] : starts[seq_id + 1]].double()
        q_len = q.shape[0]
        pos = torch.arange(seq_len - q_len, seq_len)[:, None]
        keys = torch.arange(seq_len)[None, :]
        mask = (keys <= pos) & (keys > pos - 7)
        out = F.scaled_dot_product_attention(
            q.transpose(0, 1),
            batch.dense_keys[seq_id].double().transpose(0, 1),
            batch.dense_values[seq_id].double().transpose(0, 1),
            attn_mask=mask,
            scale=0.2,
            enable_gqa=True,
        ).transpose(0, 1)
        torch.testing.assert_close(out, expected[starts[seq_id] : starts[seq_id + 1]], atol=1e-10, rtol=0)


def test_empty_batch(device: torch.device) -> None:
    params = AttentionParams(scale=1.0)
    batch = to_device(make_batch([1], [3], params=params), device)
    empty = batch.query[:0]
    for fn in (paged_attention, paged_attention_reference):
        out = fn(
            empty,
            batch.key_cache,
            batch.value_cache,
            batch.block_table[:0],
            batch.query_start_loc[:1],
            batch.seq_lens[:0],
            params,
        )
        assert out.shape == (0, 4, HEAD_DIM)


def test_dispatch_follows_env(monkeypatch: pytest.MonkeyPatch) -> None:
    params = AttentionParams(scale=HEAD_DIM**-0.5, chunk_size=4)
    batch = make_batch([3, 1], [3, 10], params=params, seed=11)
    reference = paged_attention_reference(*batch.args(), params)
    for backend in ("torch", "triton"):
        monkeypatch.setenv("HKV_ATTENTION", backend)
        out = paged_attention_forward(*batch.args(), params, max_query_len=3)
        torch.testing.assert_close(out, reference, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda a: a.update(query=a["query"][:, :3]), "multiple of num_kv_heads"),
        (lambda a: a.update(query=a["query"][..., :8]), "head_dim"),
        (lambda a: a.update(key_cache=a["key_cache"].half()), "key_cache dtype"),
        (lambda a: a.update(query_start_loc=a["query_start_loc"][:-1]), "query_start_loc must have"),
        (lambda a: a.update(block_table=a["block_table"].float()), "block_table must have dtype"),
        (lambda a: a.update(seq_lens=a["seq_lens"][None]), "seq_lens must be 1-D"),
        (lambda a: a.update(block_table=a["block_table"][:1]), "block_table has 1 rows"),
        (lambda a: a.update(sinks=torch.zeros(3)), "sinks must have num_q_heads"),
        (lambda a: a.update(query=a["query"].double()), "query must have dtype"),
    ],
)
def test_bad_arguments_raise(mutate, message: str) -> None:
    params = AttentionParams(scale=1.0)
    batch = make_batch([2, 1], [2, 5], params=params)
    names = ("query", "key_cache", "value_cache", "block_table", "query_start_loc", "seq_lens")
    kwargs = dict(zip(names, batch.args(), strict=True))
    kwargs["sinks"] = None
    mutate(kwargs)
    for fn in (paged_attention, paged_attention_reference):
        with pytest.raises(ValueError, match=message):
            fn(params=params, **kwargs)


def test_triton_wrapper_rejects_wrong_device_and_strides() -> None:
    class CompiledKernel:  # stands in for a compiled JITFunction
        pass

    with pytest.raises(ValueError, match="compiled Triton kernels need CUDA tensors"):
        check_triton_launchable(CompiledKernel(), {"query": torch.zeros(2, 2, 4)})
    params = AttentionParams(scale=1.0)
    batch = make_batch([2], [2], params=params)
    strided_query = torch.zeros(2, 4, 2 * HEAD_DIM)[..., ::2]
    with pytest.raises(ValueError, match=r"query must be contiguous in its last dim"):
        paged_attention(strided_query, *batch.args()[1:], params)


def test_reference_checks_values() -> None:
    params = AttentionParams(scale=1.0)
    batch = make_batch([2, 1], [2, 5], params=params)
    with pytest.raises(ValueError, match="needs 5 blocks"):
        paged_attention_reference(*batch.args()[:5], torch.tensor([2, 20], dtype=torch.int32), params)
    with pytest.raises(ValueError, match="query_start_loc must rise"):
        paged_attention_reference(
            *batch.args()[:4], torch.tensor([0, 2, 2], dtype=torch.int32), batch.seq_lens, params
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scale": 0.0}, "scale"),
        ({"scale": 1.0, "sliding_window": 0}, "sliding_window"),
        ({"scale": 1.0, "chunk_size": 2.5}, "chunk_size"),
        ({"scale": 1.0, "softcap": -1.0}, "softcap"),
    ],
)
def test_attention_params_validate(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AttentionParams(**kwargs)


def test_first_visible_key() -> None:
    assert AttentionParams(scale=1.0).first_visible_key(37) == 0
    assert AttentionParams(scale=1.0, sliding_window=8).first_visible_key(37) == 30  # 37 - 8 < k
    assert AttentionParams(scale=1.0, chunk_size=16).first_visible_key(37) == 32
    assert AttentionParams(scale=1.0, sliding_window=3, chunk_size=16).first_visible_key(33) == 32


@pytest.mark.parametrize("params", [
    AttentionParams(scale=HEAD_DIM**-0.5, sliding_window=100),
    AttentionParams(scale=HEAD_DIM**-0.5, chunk_size=96),
    AttentionParams(scale=HEAD_DIM**-0.5, sliding_window=300, chunk_size=256),
], ids=["window", "chunk", "window+chunk"])
def test_torch_path_tiles_long_bounded_prefills(params: AttentionParams) -> None:
    """The fast torch path splits a windowed / chunked prefill into 128-query tiles, each reading
    only its visible keys: 600 fresh tokens, and 300 on top of 400 cached, equal the oracle."""
    batch = make_batch([600, 300, 1], [600, 700, 650], params=params)
    fast = paged_attention_torch(*batch.args(), params)
    assert not fast.isnan().any()
    torch.testing.assert_close(fast.double(), naive_attention(batch, params), atol=TOLERANCES[torch.float32],
                               rtol=0)


@pytest.mark.parametrize("window", [None, 64], ids=["full", "window-covers"])
@pytest.mark.parametrize("q_lens, seq_lens, merged", [
    ([40], [40], 0),  # fresh prefill: SDPA's top-left causal
    ([25], [40], 1),  # a chunk on top of 15 cached tokens: prior keys + own keys, merged by LSE
    ([25, 1, 9, 40], [60, 61, 9, 40], 1),  # mixed step: one continued chunk, two fresh, a decode
])
def test_torch_prefill_fast_paths(window: int | None, q_lens: list[int], seq_lens: list[int], merged: int,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefill chunks whose first visible key does not move (full attention, or a window longer
    than the sequence) skip the mask: causal SDPA when queries and keys start together, else the
    two-part log-sum-exp merge, which runs once per continued chunk and layer; both equal the
    fp64 oracle."""
    import hkv.kernels.torch_paged as torch_paged

    calls = []
    merge = torch_paged._prior_then_causal
    monkeypatch.setattr(torch_paged, "_prior_then_causal", lambda *a: calls.append(1) or merge(*a))
    params = AttentionParams(scale=HEAD_DIM**-0.5, sliding_window=window)
    batch = make_batch(q_lens, seq_lens, params=params, seed=3)
    fast = paged_attention_torch(*batch.args(), params)
    assert not fast.isnan().any()
    torch.testing.assert_close(fast.double(), naive_attention(batch, params), atol=TOLERANCES[torch.float32],
                               rtol=0)
    assert len(calls) == merged
