"""MiniMax-M3's MiniMaxSparseKVPool as SGLang 0.5.23 allocates it, beyond its per-token cell
(cell_bytes.py): the page size SGLang's model override picks, and the lines its index sub-pools print.

Page size (arg_groups/model_overrides/minimax_m3.py): on Hopper the override sets attention_backend fa3
and, with no --page-size, page_size 128; on SM100 it picks fa4 (trtllm_mha with FP8 E4M3 KV), both at
page 128 (the sparse block MSA needs). Elsewhere nothing is overridden: SGLang's CUDA default, 1.

Index sub-pools (mem_cache/memory_pool.py MiniMaxSparseKVPool): after the main K/V pool of every layer
(the usual "KV Cache is allocated" line), the sparse layers' index keys live in an MHATokenToKOnlyPool
of one head x sparse_index_dim per layer, (tokens + page) rows, in the index dtype; it prints
"KV Cache is allocated. dtype: <index dtype>, #tokens: N, K size: X GB, V size: 0.00 GB" (GB = GiB).
"""

from __future__ import annotations

MINIMAX_SPARSE_PAGE_SIZE = 128  # fa3 / fa4 / trtllm_mha, the sparse block size MSA reads
PAGE_128_MAJORS = frozenset({9, 10})  # get_platform().is_sm90 / is_sm100: compute capability majors
DEFAULT_PAGE_SIZE = 1  # SGLang's CUDA default where no override applies
GIB = 1 << 30
_TORCH_DTYPES = {1: "torch.float8_e4m3fn", 2: "torch.bfloat16", 4: "torch.float32"}


def minimax_sparse_page_size(compute_capability: tuple[int, int]) -> int:
    """The page size SGLang gives MiniMax-M3 when --page-size is not given."""
    return MINIMAX_SPARSE_PAGE_SIZE if compute_capability[0] in PAGE_128_MAJORS else DEFAULT_PAGE_SIZE


def index_key_pool_bytes(tokens: int, page_size: int, index_layers: int, index_dim: int, index_bytes: int) -> int:
    """Bytes of the K-only index pool: `index_layers` buffers of (tokens + page) rows x 1 head x
    `index_dim` elements of `index_bytes`."""
    return index_layers * (tokens + page_size) * index_dim * index_bytes


def index_pool_line(tokens: int, page_size: int, index_layers: int, index_dim: int, index_bytes: int) -> str:
    """The K-only index pool's allocation line, as MHATokenToKOnlyPool prints it."""
    dtype = _TORCH_DTYPES.get(index_bytes, f"{index_bytes}-byte")
    k_gib = index_key_pool_bytes(tokens, page_size, index_layers, index_dim, index_bytes) / GIB
    return f"KV Cache is allocated. dtype: {dtype}, #tokens: {tokens}, K size: {k_gib:.2f} GB, V size: 0.00 GB"
