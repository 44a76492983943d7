"""probe_capacity: how many worst-case requests the real pools and managers admit."""

from __future__ import annotations

from hkv.planner.layout import Layout
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.kv_cache_manager import KVCacheManager
from hkv.runtime.request import Request


def probe_capacity(layout: Layout, max_model_len: int) -> int:
    """Admit identical requests of `max_model_len` tokens one after another, each popping its
    worst-case footprint (per group `blocks_per_request(max_model_len, in_flight_tokens)` real
    blocks) from the real pools, until the next one does not fit; return how many fit.

    Equals `layout.max_num_requests(max_model_len)` by construction of the Layout contract; a
    difference means the runtime and the planner disagree (null blocks, pool assignment).
    """
    if max_model_len < 1:
        raise ValueError(f"max_model_len must be >= 1, got {max_model_len}")
    if not layout.groups:
        return 0
    if any(p.num_blocks < 1 for p in layout.pools if layout.groups_of(p.pool_id)):
        return 0  # a pool without even its null block admits nothing
    if not any(layout.blocks_per_request(max_model_len)):
        raise ValueError(f"layout {layout.name!r}: a request of {max_model_len} tokens needs no block")
    manager = KVCacheManager(layout, CacheConfig(enable_caching=False))
    admitted: list[Request] = []
    while True:
        request = Request(f"probe-{len(admitted)}", (0,), max_output_len=1)
        if not manager.reserve_worst_case(request, max_model_len):
            break
        admitted.append(request)
    manager.check_integrity()
    return len(admitted)
