"""How many max-length requests SGLang's pools hold at once (hkv's own estimate, not a figure
SGLang prints): each keeps context_len tokens in the full pool; in a sliding pool at most its window
plus what SGLang frees lazily (SGLANG_SWA_EVICTION_INTERVAL tokens) and a page for the next decode
(compute_swa_request_cap's per-request term); never more than max_running_requests."""

from __future__ import annotations

from hkv.planner.engines.sglang.pools import SglangPools
from hkv.planner.engines.sglang.token_pools import SWA_EVICTION_INTERVAL


def max_length_requests(pools: SglangPools, sliding_window: int | None) -> int:
    fits = pools.max_total_num_tokens // pools.context_len
    if pools.swa_tokens is not None and sliding_window is not None:
        per_request = min(pools.context_len, sliding_window + SWA_EVICTION_INTERVAL + 2 * pools.page_size)
        fits = min(fits, pools.swa_tokens // per_request)
    return min(fits, pools.max_running_requests)
