"""hkv.runtime.kv_cache: the hybrid KV cache itself.

It owns the physical blocks (block pool, free queue, prefix hashes), one manager per cache kind
(full attention, sliding window, chunked local, recurrent state), the coordinator that intersects
their prefix-cache hits, the eviction policies (behind the Eviction interface), the per-request
block tables (RequestBlocks, created and dropped by the manager) and the KVCacheManager facade
the scheduler calls (allocate, free, cache, stats, block tables). It executes a planner Layout:
groups, page sizes and block counts come from there. It knows requests only through their token
ids, hashes and progress; it never sees a model, a tensor or the scheduler's queues (the
scheduler hands it the head of its waiting queue).
"""
