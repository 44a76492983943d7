"""The switches of the vLLM-compatible mode: where vLLM's KV cache manager and hkv's differ.

Each is a CacheConfig field. hkv's defaults serve hybrid models better (sparse sliding-window
caching, caching once computed, one block per prefix hash); vLLM's settings exist so that hkv
can reproduce vLLM 0.32 block for block: `CacheConfig.vllm()` sets them all (with
EvictionPolicy.LRU), and tests/oracle/vllm_side/test_manager_differential.py runs that mode in
lockstep with vLLM's own manager.

    switch             hkv default          vLLM (CacheConfig.vllm())
    SlidingRetention   HIT_POINTS           ALL
    CacheTiming        COMPUTED             SCHEDULED
    DuplicateBlocks    DROP                 KEEP
    FreeOrder          REQUEST_TAIL_FIRST   GROUP_BY_GROUP (KVCacheManager.free) or
                                            REQUEST_TAIL_FIRST (its deferred free)
"""

from __future__ import annotations

from enum import Enum


class SlidingRetention(str, Enum):
    """Which full blocks of a sliding-window group are registered in the prefix cache.

    ALL: every full block (dense), as full attention. vLLM's behaviour with a KVCacheConfig whose
        prefix_cache_retention_interval is None (the dataclass default).
    HIT_POINTS: only the W - 1 tokens before the lengths where a later request is expected to
        hit (close to vLLM's engine default, retention interval 0): where full attention already
        hit further than the hybrid hit (a shared-prefix junction), the prompt end (a resend) and
        the length the request reached (the next turn of a conversation). Other sliding blocks
        can never serve a hit on their own, so they are freed uncached and reused first.
    """

    ALL = "all"
    HIT_POINTS = "hit_points"


class CacheTiming(str, Enum):
    """When a full block is registered in the prefix cache.

    COMPUTED: once its tokens are computed, i.e. by the request's next allocate_slots (or free)
        after the step that computed them. A request admitted in the same step cannot hit it.
    SCHEDULED: by the allocate_slots call that schedules its last token (vLLM): a request
        admitted later in the same step already hits it (its KV is written by the same forward
        pass, before attention reads it). Not supported with recurrent groups (vLLM's Mamba
        "align" mode defers those checkpoints; hkv does not model that).
    """

    COMPUTED = "computed"
    SCHEDULED = "scheduled"


class DuplicateBlocks(str, Enum):
    """What happens when a block fills up with the same prefix hash as a block already cached.

    DROP: one block per (hash, group). A new in-use copy stays unhashed (freed to the front, reused
        first); a cached-free copy loses its hash in favour of the new in-use copy.
    KEEP: every copy is registered (vLLM: block tables stay append-only, the map holds all copies);
        a hit takes the earliest registered copy still cached; each copy is evicted on its own.
    """

    DROP = "drop"
    KEEP = "keep"


class FreeOrder(str, Enum):
    """Order in which EvictionPolicy.LRU hands a stopped request's blocks to the free queue.

    REQUEST_TAIL_FIRST: the request's blocks of every group, in group order, reversed as one list
        (vLLM 0.33's free, and vLLM 0.32's deferred free): the last group's tail is evicted first.
    GROUP_BY_GROUP: group 0's blocks tail first, then group 1's, ... (vLLM 0.32's
        KVCacheManager.free): group 0's tail is evicted first.
    """

    REQUEST_TAIL_FIRST = "request_tail_first"
    GROUP_BY_GROUP = "group_by_group"
