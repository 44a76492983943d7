"""Argument checks shared by the Triton wrappers and the torch reference.

Every check raises ValueError naming the argument and the offending value. None of them reads tensor
contents, so none forces a device sync; value-level contracts (slots in range, block tables long enough)
are documented in the kernel modules and checked only by the torch reference.
"""

from __future__ import annotations

import torch

from hkv.kernels.params import AttentionParams

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
INDEX_DTYPES = (torch.int32, torch.int64)


def _check_rank(name: str, tensor: torch.Tensor, rank: int, layout: str) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor {layout}, got {type(tensor).__name__}")
    if tensor.dim() != rank:
        raise ValueError(f"{name} must be {rank}-D {layout}, got shape {tuple(tensor.shape)}")


def _check_dtype(name: str, tensor: torch.Tensor, allowed: tuple[torch.dtype, ...]) -> None:
    if tensor.dtype not in allowed:
        names = ", ".join(str(d).removeprefix("torch.") for d in allowed)
        raise ValueError(
            f"{name} must have dtype in ({names}), got {str(tensor.dtype).removeprefix('torch.')}"
        )


def _check_same_device(named: dict[str, torch.Tensor]) -> None:
    devices = {name: t.device for name, t in named.items()}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{name}={device}" for name, device in devices.items())
        raise ValueError(f"all tensors must be on one device, got {listing}")


def check_store_kv_args(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    _check_rank("key", key, 3, "[num_tokens, num_kv_heads, head_dim]")
    _check_rank("value", value, 3, "[num_tokens, num_kv_heads, head_dim]")
    _check_rank("key_cache", key_cache, 4, "[num_blocks, block_size, num_kv_heads, head_dim]")
    _check_rank("value_cache", value_cache, 4, "[num_blocks, block_size, num_kv_heads, head_dim]")
    _check_rank("slot_mapping", slot_mapping, 1, "[num_tokens]")
    if value.shape != key.shape:
        raise ValueError(f"value shape {tuple(value.shape)} must equal key shape {tuple(key.shape)}")
    if value_cache.shape != key_cache.shape:
        raise ValueError(
            f"value_cache shape {tuple(value_cache.shape)} "
            f"must equal key_cache shape {tuple(key_cache.shape)}"
        )
    if key.shape[1:] != key_cache.shape[2:]:
        raise ValueError(
            f"key [num_tokens, num_kv_heads, head_dim] = {tuple(key.shape)} does not match key_cache "
            f"[num_blocks, block_size, num_kv_heads, head_dim] = {tuple(key_cache.shape)} "
            "in (num_kv_heads, head_dim)"
        )
    if slot_mapping.shape[0] != key.shape[0]:
        raise ValueError(
            f"slot_mapping has {slot_mapping.shape[0]} entries but key has {key.shape[0]} tokens"
        )
    for name, tensor in (
        ("key", key),
        ("value", value),
        ("key_cache", key_cache),
        ("value_cache", value_cache),
    ):
        _check_dtype(name, tensor, FLOAT_DTYPES)
        if tensor.dtype != key_cache.dtype:
            raise ValueError(f"{name} dtype {tensor.dtype} must equal key_cache dtype {key_cache.dtype}")
    _check_dtype("slot_mapping", slot_mapping, INDEX_DTYPES)
    _check_same_device(
        {
            "key": key,
            "value": value,
            "key_cache": key_cache,
            "value_cache": value_cache,
            "slot_mapping": slot_mapping,
        }
    )


def check_paged_attention_args(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    params: AttentionParams,
    sinks: torch.Tensor | None,
) -> None:
    _check_rank("query", query, 3, "[num_tokens, num_q_heads, head_dim]")
    _check_rank("key_cache", key_cache, 4, "[num_blocks, block_size, num_kv_heads, head_dim]")
    _check_rank("value_cache", value_cache, 4, "[num_blocks, block_size, num_kv_heads, head_dim]")
    _check_rank("block_table", block_table, 2, "[num_seqs, max_blocks]")
    _check_rank("query_start_loc", query_start_loc, 1, "[num_seqs + 1]")
    _check_rank("seq_lens", seq_lens, 1, "[num_seqs]")
    if not isinstance(params, AttentionParams):
        raise ValueError(f"params must be an AttentionParams, got {type(params).__name__}")
    if value_cache.shape != key_cache.shape:
        raise ValueError(
            f"value_cache shape {tuple(value_cache.shape)} "
            f"must equal key_cache shape {tuple(key_cache.shape)}"
        )
    num_q_heads, head_dim = query.shape[1], query.shape[2]
    num_kv_heads = key_cache.shape[2]
    if key_cache.shape[3] != head_dim:
        raise ValueError(f"query head_dim {head_dim} != key_cache head_dim {key_cache.shape[3]}")
    if num_kv_heads == 0 or num_q_heads % num_kv_heads != 0:
        raise ValueError(f"num_q_heads {num_q_heads} must be a multiple of num_kv_heads {num_kv_heads}")
    num_seqs = seq_lens.shape[0]
    if query_start_loc.shape[0] != num_seqs + 1:
        raise ValueError(
            f"query_start_loc must have num_seqs + 1 = {num_seqs + 1} entries, got {query_start_loc.shape[0]}"
        )
    if block_table.shape[0] != num_seqs:
        raise ValueError(f"block_table has {block_table.shape[0]} rows but seq_lens has {num_seqs} sequences")
    _check_dtype("query", query, FLOAT_DTYPES)
    for name, tensor in (("key_cache", key_cache), ("value_cache", value_cache)):
        if tensor.dtype != query.dtype:
            raise ValueError(f"{name} dtype {tensor.dtype} must equal query dtype {query.dtype}")
    for name, tensor in (
        ("block_table", block_table),
        ("query_start_loc", query_start_loc),
        ("seq_lens", seq_lens),
    ):
        _check_dtype(name, tensor, INDEX_DTYPES)
    named = {
        "query": query,
        "key_cache": key_cache,
        "value_cache": value_cache,
        "block_table": block_table,
        "query_start_loc": query_start_loc,
        "seq_lens": seq_lens,
    }
    if sinks is not None:
        _check_rank("sinks", sinks, 1, "[num_q_heads]")
        if sinks.shape[0] != num_q_heads:
            raise ValueError(f"sinks must have num_q_heads = {num_q_heads} entries, got {sinks.shape[0]}")
        _check_dtype("sinks", sinks, FLOAT_DTYPES)
        named["sinks"] = sinks
    _check_same_device(named)


def check_triton_launchable(kernel: object, named: dict[str, torch.Tensor]) -> None:
    """Device and stride rules of a Triton launch (after the shared checks passed).

    Compiled kernels need CUDA tensors; an interpreted kernel (TRITON_INTERPRET=1 when the kernel
    module was imported) needs CPU tensors. The innermost dim must be unit-stride; other strides are free.
    """
    device = next(iter(named.values())).device
    interpreted = type(kernel).__name__ == "InterpretedFunction"
    if interpreted and device.type != "cpu":
        raise ValueError(
            f"the Triton interpreter (TRITON_INTERPRET=1) runs on CPU tensors, got tensors on {device}"
        )
    if not interpreted and device.type != "cuda":
        raise ValueError(
            f"compiled Triton kernels need CUDA tensors, got tensors on {device}; use the torch path "
            "(HKV_ATTENTION=torch) or set TRITON_INTERPRET=1 before hkv's Triton kernels are imported"
        )
    for name, tensor in named.items():
        if tensor.numel() > 0 and tensor.stride(-1) != 1:
            raise ValueError(
                f"{name} must be contiguous in its last dim (stride(-1) == 1), "
                f"got strides {tuple(tensor.stride())}"
            )
