"""MiniMax-M3's MiniMaxSparseKVPool as SGLang 0.5.23 allocates it, beyond its per-token cell
(cell_bytes.py): the page size SGLang's model override picks, and the lines its index sub-pools print.

Page size (arg_groups/model_overrides/minimax_m3.py): on Hopper the override sets attention_backend fa3
and, with no --page-size, page_size 128; on SM100 it picks fa4 (trtllm_mha with FP8 E4M3 KV), both at
page 128 (the sparse block MSA needs). Elsewhere nothing is overridden: SGLang's CUDA default, 1.

Index sub-pools (mem_cache/memory_pool.py MiniMaxSparseKVPool): after the main K/V pool of every layer
(the usual "KV Cache is allocated" line), each sparse layer keeps an index key of one head x
sparse_index_dim, (tokens + page) rows, in the index dtype; a sparse layer whose
`sparse_disable_index_value` flag is 0 (every sparse layer when the config has no such list) keeps an
index value of the same size too. The K+V layers form an MHATokenToKVPool, printed first
("K size: X GB, V size: X GB"), the K-only layers an MHATokenToKOnlyPool ("V size: 0.00 GB"). GB = GiB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hkv.planner.budget.gpu_table import GIB

MINIMAX_SPARSE_PAGE_SIZE = 128  # fa3 / fa4 / trtllm_mha, the sparse block size MSA reads
PAGE_128_MAJORS = frozenset({9, 10})  # get_platform().is_sm90 / is_sm100: compute capability majors
DEFAULT_PAGE_SIZE = 1  # SGLang's CUDA default where no override applies
_TORCH_DTYPES = {1: "torch.float8_e4m3fn", 2: "torch.bfloat16", 4: "torch.float32"}


def minimax_sparse_page_size(compute_capability: tuple[int, int]) -> int:
    """The page size SGLang gives MiniMax-M3 when --page-size is not given."""
    return MINIMAX_SPARSE_PAGE_SIZE if compute_capability[0] in PAGE_128_MAJORS else DEFAULT_PAGE_SIZE


def index_value_layers(config: Mapping[str, Any]) -> int:
    """Sparse layers whose index keeps a value beside its key, read from config.json as SGLang reads
    it (get_minimax_sparse_attention_config: text_config's sparse_attention_config, else the top
    level's; get_minimax_sparse_disable_value_layer_ids: no list means no layer disables it)."""
    text = config.get("text_config")
    sparse = text.get("sparse_attention_config") if isinstance(text, Mapping) else None
    sparse = sparse if isinstance(sparse, Mapping) else config.get("sparse_attention_config")
    if not isinstance(sparse, Mapping):
        return 0
    sparse_ids = [i for i, freq in enumerate(sparse.get("sparse_attention_freq") or ()) if freq != 0]
    flags = sparse.get("sparse_disable_index_value")
    if flags is None:
        return len(sparse_ids)
    disabled = {i for i, flag in enumerate(flags) if flag != 0}
    return sum(1 for i in sparse_ids if i not in disabled)


def index_buffer_bytes(tokens: int, page_size: int, buffers: int, index_dim: int, index_bytes: int) -> int:
    """Bytes of `buffers` index buffers (keys or values) of (tokens + page) rows x 1 head x
    `index_dim` elements of `index_bytes`."""
    return buffers * (tokens + page_size) * index_dim * index_bytes


def index_pool_lines(tokens: int, page_size: int, sparse_layers: int, value_layers: int, index_dim: int,
                     index_bytes: int) -> list[str]:
    """The index sub-pools' allocation lines, K+V pool first, as MiniMaxSparseKVPool builds them."""
    dtype = _TORCH_DTYPES.get(index_bytes, f"{index_bytes}-byte")
    head = f"KV Cache is allocated. dtype: {dtype}, #tokens: {tokens}, "
    lines = []
    if value_layers > 0:
        kv_gib = index_buffer_bytes(tokens, page_size, value_layers, index_dim, index_bytes) / GIB
        lines.append(f"{head}K size: {kv_gib:.2f} GB, V size: {kv_gib:.2f} GB")
    if sparse_layers > value_layers:
        k_gib = index_buffer_bytes(tokens, page_size, sparse_layers - value_layers, index_dim, index_bytes) / GIB
        lines.append(f"{head}K size: {k_gib:.2f} GB, V size: 0.00 GB")
    return lines
