"""hkv.runtime: the hybrid KV cache manager, its scheduler and the capacity probe."""

from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.live.block_tables import BlockTables
from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy
from hkv.runtime.kv_cache.vllm_compat import CacheTiming, DuplicateBlocks, FreeOrder, SlidingRetention
from hkv.runtime.kv_cache.cache_stats import CacheStats
from hkv.runtime.kv_cache.capacity_probe import probe_capacity
from hkv.runtime.errors import OutOfBlocksError, RequestTooLongError, RuntimeCacheError
from hkv.runtime.kv_cache.kv_cache_manager import ComputedBlocks, KVCacheManager
from hkv.runtime.request import Request, RequestStatus
from hkv.runtime.scheduler.scheduler import Scheduler, SchedulerConfig
from hkv.runtime.scheduler.scheduler_output import ScheduledRequest, SchedulerOutput

__all__ = [
    "NULL_BLOCK_ID", "BlockPool", "BlockTables", "CacheConfig", "CacheStats", "CacheTiming",
    "ComputedBlocks", "DuplicateBlocks", "EvictionPolicy", "FreeOrder", "KVCacheManager",
    "OutOfBlocksError", "Request", "RequestStatus", "RequestTooLongError", "RuntimeCacheError",
    "ScheduledRequest", "Scheduler", "SchedulerConfig", "SchedulerOutput", "SlidingRetention",
    "probe_capacity",
]
