"""The start-up lines SGLang 0.5.23 prints about its pools, as hkv predicts them (the message text,
without the logger's timestamp prefix).

Formats (model_executor/pool_configurator.py, mem_cache/memory_pool.py, swa_memory_pool.py,
managers/scheduler.py):
    Use sliding window memory pool. full_layer_tokens={full}, swa_layer_tokens={swa}
    max_running_requests is capped to {R} by the mamba state cache (max_mamba_cache_size={K}, {n} state
      slots per request). To raise it: ... (a warning, where the state pool sets the cap)
    Mamba Cache is allocated. max_mamba_cache_size: {K}, conv_state size: {:.2f}GB, ssm_state size: {:.2f}GB
    KV Cache is allocated. dtype: {dtype}, #tokens: {N}, K size: {:.2f} GB, V size: {:.2f} GB
      ("Full KV Cache ..." and "SWA KV Cache ..." for the two pools of a hybrid SWA model; MLA pools
      print one "KV size")
    SWAKVPool mem usage: {:.2f} GB, swa size: {swa}, full size: {full}
    max_total_num_tokens={N}, chunked_prefill_size={C}, max_prefill_tokens={P}, max_running_requests={R},
      context_len={L}
Every buffer holds one page more than its tokens (the padding slot), a state pool one slot more;
"GB" is GiB. The scheduler line's last field, available_gpu_mem (free memory after CUDA graph
capture), is not predicted and left out.
"""

from __future__ import annotations

from hkv.planner.budget.gpu_table import GIB
from hkv.planner.engines.sglang.dsv4_startup_lines import dsv4_start_up_lines
from hkv.planner.engines.sglang.minimax_sparse_pool import index_pool_lines
from hkv.planner.engines.sglang.pool_resolution import SglangResolution

DEFAULT_MAX_PREFILL_TOKENS = 16384  # --max-prefill-tokens
_TORCH_DTYPES = {1: "torch.float8_e4m3fn", 2: "torch.bfloat16", 4: "torch.float32"}


def start_up_lines(res: SglangResolution, chunked_prefill_size: int) -> tuple[str, ...]:
    """The lines in the order SGLang prints them."""
    if res.dsv4 is not None:
        return dsv4_start_up_lines(res, chunked_prefill_size)
    pools = res.pools
    lines: list[str] = []
    if pools.swa_tokens is not None:
        if res.cell.full_layers == 0:
            lines.append(f"Use sliding window memory pool (all SWA). swa_layer_tokens={pools.swa_tokens}")
        else:
            lines.append(f"Use sliding window memory pool. full_layer_tokens={pools.max_total_num_tokens}, "
                         f"swa_layer_tokens={pools.swa_tokens}")
    if res.mamba is not None and res.running.capped_by_mamba:
        lines.append(
            f"max_running_requests is capped to {pools.max_running_requests} by the mamba state cache "
            f"(max_mamba_cache_size={res.mamba.slots}, {res.mamba.slots_per_request} state slots per request). "
            f"To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state size "
            f"with --mamba-ssm-dtype bfloat16.")
    if res.mamba is not None:
        rows = res.mamba.slots + 1
        lines.append(f"Mamba Cache is allocated. max_mamba_cache_size: {res.mamba.slots}, "
                     f"conv_state size: {rows * res.mamba.state.conv_bytes / GIB:.2f}GB, "
                     f"ssm_state size: {rows * res.mamba.state.ssm_bytes / GIB:.2f}GB ")
    lines += _kv_lines(res)
    lines.append(f"max_total_num_tokens={pools.max_total_num_tokens}, chunked_prefill_size={chunked_prefill_size}, "
                 f"max_prefill_tokens={DEFAULT_MAX_PREFILL_TOKENS}, "
                 f"max_running_requests={pools.max_running_requests}, context_len={pools.context_len}")
    return tuple(lines)


def _kv_lines(res: SglangResolution) -> list[str]:
    pools, cell, page = res.pools, res.cell, res.pools.page_size
    dtype = _TORCH_DTYPES.get(res.kv_dtype.element_bytes, f"{res.kv_dtype.element_bytes}-byte")
    full_rows = pools.max_total_num_tokens + page
    if res.model.is_mla:
        kv = full_rows * cell.full / GIB
        return [f"KV Cache is allocated. dtype: {dtype}, #tokens: {pools.max_total_num_tokens}, KV size: {kv:.2f} GB"]
    full_k, full_v = _k_v_bytes(res, full_rows, swa=False)
    if pools.swa_tokens is None:
        return [(f"KV Cache is allocated. dtype: {dtype}, #tokens: {pools.max_total_num_tokens}, "
                f"K size: {full_k / GIB:.2f} GB, V size: {full_v / GIB:.2f} GB")] + _index_lines(res)
    swa_k, swa_v = _k_v_bytes(res, pools.swa_tokens + page, swa=True)
    total = (full_k + full_v + swa_k + swa_v) / GIB
    return [
        (f"Full KV Cache is allocated. dtype: {dtype}, #tokens: {pools.max_total_num_tokens}, "
        f"K size: {full_k / GIB:.2f} GB, V size: {full_v / GIB:.2f} GB"),
        (f"SWA KV Cache is allocated. dtype: {dtype}, #tokens: {pools.swa_tokens}, "
        f"K size: {swa_k / GIB:.2f} GB, V size: {swa_v / GIB:.2f} GB"),
        f"SWAKVPool mem usage: {total:.2f} GB, swa size: {pools.swa_tokens}, full size: {pools.max_total_num_tokens}",
    ]


def _k_v_bytes(res: SglangResolution, rows: int, *, swa: bool) -> tuple[int, int]:
    """Bytes of the K and the V buffers of one pool (all its layers, `rows` token rows each)."""
    shape = res.model.swa if swa else res.model.full
    layers = res.cell.swa_layers if swa else res.cell.full_layers
    if shape is None or layers == 0:
        return 0, 0
    per_row = max(1, shape.kv_heads // res.args.tp_size) * layers * rows * res.kv_dtype.element_bytes
    return per_row * shape.head_dim, per_row * shape.v_head_dim


def _index_lines(res: SglangResolution) -> list[str]:
    """MiniMax-M3's index sub-pools, printed after its main pool (minimax_sparse_pool.py)."""
    model, pools = res.model, res.pools
    if not model.sparse_indexer or model.indexer_layers == 0:
        return []
    return index_pool_lines(pools.max_total_num_tokens, pools.page_size, model.indexer_layers,
                            model.extras.sparse_index_value_layers, model.indexer_elements,
                            res.kv_dtype.sparse_index_bytes)
