"""The start-up lines SGLang 0.5.23 prints about DeepSeek-V4's pools (message text only), in order:

    DSV4 SWA sizing: mode=ratio (explicit), swa_tokens={swa}, swa_full_tokens_ratio={r}
    DSV4 memory calculation: unified=False, unified_fp8=False, dspark_draft_bf16=False,
      bytes_per_full_token={:.2f}, available_bytes={:.2f} GB, c128_state_fixed={:.2f} GB, c2_state_fixed=0.00 GB,
      swa_fixed=0.00 GB, swa_ring_fixed=0.00 GB, c4_state_fixed=0.00 GB, full_token={full}
    DSV4 pool sizes: full={full}, swa={swa}, c4={c4}, c128={c128}, c4_state={c4_state}, c128_state=0
      (with --max-total-tokens below the profiled pool, the first and third again for the capped pools)
    Initialize DeepSeekV4TokenToKVPool with max_num_reqs={R} swa_size={swa} c4_size={c4}
      c4_logical_size={c128 x 32} c128_size={c128} c4_state_pool_size={..} c128_state_pool_size={(R + 1) x 128}
      unified=False unified_fp8=False
    max_total_num_tokens={full}, chunked_prefill_size=..., max_prefill_tokens=16384, max_running_requests={R},
      context_len={L}
(model_executor/pool_configurator.py, mem_cache/deepseek_v4_memory_pool.py, managers/scheduler.py;
"GB" is GiB; the scheduler line's available_gpu_mem is not predicted and left out.)
"""

from __future__ import annotations

from hkv.planner.budget.gpu_table import GIB
from hkv.planner.engines.sglang.dsv4_pools import Dsv4Pools, Dsv4PoolSizes
from hkv.planner.engines.sglang.pool_resolution import SglangResolution

DEFAULT_MAX_PREFILL_TOKENS = 16384  # --max-prefill-tokens
C4_LOGICAL_PER_C128 = 32  # DeepSeekV4TokenToKVPool: c4_logical_size = c128_size * 32


def dsv4_start_up_lines(res: SglangResolution, chunked_prefill_size: int) -> tuple[str, ...]:
    """The lines in the order SGLang prints them; `res` from dsv4_resolution.resolve_dsv4."""
    assert res.dsv4 is not None
    dsv4, pools = res.dsv4, res.pools
    sizer, first = dsv4.sizer, dsv4.from_budget
    lines = [
        _swa_sizing(dsv4, first),
        (f"DSV4 memory calculation: unified=False, unified_fp8=False, dspark_draft_bf16=False, "
         f"bytes_per_full_token={sizer.bytes_per_full_token:.2f}, available_bytes={res.kv_bytes / GIB:.2f} GB, "
         f"c128_state_fixed={sizer.c128_state_fixed_bytes / GIB:.2f} GB, c2_state_fixed=0.00 GB, swa_fixed=0.00 GB, "
         f"swa_ring_fixed=0.00 GB, c4_state_fixed=0.00 GB, full_token={first.full}"),
        _pool_sizes(first),
    ]
    if dsv4.sizes != first:
        lines += [_swa_sizing(dsv4, dsv4.sizes), _pool_sizes(dsv4.sizes)]
    final = dsv4.sizes
    lines.append(
        f"Initialize DeepSeekV4TokenToKVPool with max_num_reqs={pools.max_running_requests} swa_size={final.swa} "
        f"c4_size={final.c4} c4_logical_size={final.c128 * C4_LOGICAL_PER_C128} c128_size={final.c128} "
        f"c4_state_pool_size={final.c4_state} c128_state_pool_size={dsv4.c128_state} unified=False unified_fp8=False")
    lines.append(f"max_total_num_tokens={pools.max_total_num_tokens}, chunked_prefill_size={chunked_prefill_size}, "
                 f"max_prefill_tokens={DEFAULT_MAX_PREFILL_TOKENS}, max_running_requests={pools.max_running_requests}, "
                 f"context_len={pools.context_len}")
    return tuple(lines)


def _swa_sizing(dsv4: Dsv4Pools, sizes: Dsv4PoolSizes) -> str:
    # The model override sets the ratio, so SGLang reports it as given ("explicit") either way.
    return (f"DSV4 SWA sizing: mode=ratio (explicit), swa_tokens={sizes.swa}, "
            f"swa_full_tokens_ratio={dsv4.sizer.swa_ratio}")


def _pool_sizes(sizes: Dsv4PoolSizes) -> str:
    # c128_state is 0 until max_running_requests is known (finalize_with_max_running_requests).
    return (f"DSV4 pool sizes: full={sizes.full}, swa={sizes.swa}, c4={sizes.c4}, c128={sizes.c128}, "
            f"c4_state={sizes.c4_state}, c128_state=0")
