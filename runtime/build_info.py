"""Which build of the simulation path is running: pure Python or compiled with mypyc.

A compiled install (`HKV_COMPILE=1`, see setup.py) replaces COMPILED_MODULES with extension
modules of the same names; results are identical, only speed differs. This file imports nothing
of hkv at module level: setup.py reads COMPILED_MODULES from it before hkv is installed.
"""

from __future__ import annotations

import importlib
import importlib.machinery

# The block pool, the managers, the coordinator, the admission gate, the scheduler, the simulator loop and the
# metrics it records per step: the modules every simulated step goes through. The lane pool
# too: it subclasses BlockPool and FreeBlockQueue, and an interpreted class cannot subclass a
# compiled one. Names are relative to hkv.runtime.
COMPILED_MODULES = (
    "request",
    "kv_cache.free_block_queue", "kv_cache.block_pool", "kv_cache.lane_pool", "kv_cache.block_hash",
    "kv_cache.hit_point_counter", "kv_cache.kind_manager", "kv_cache.full_attention_manager",
    "kv_cache.sliding_window_manager", "kv_cache.chunked_local_manager",
    "kv_cache.recurrent_state_manager", "kv_cache.circular_buffer_manager", "kv_cache.kv_cache_coordinator",
    "kv_cache.request_blocks",
    "kv_cache.eviction", "kv_cache.lru_eviction",
    "kv_cache.group_aware_eviction", "kv_cache.kv_cache_manager", "kv_cache.admission_gate",
    "scheduler.scheduler", "scheduler.scheduler_output", "simulation.simulator",
    "simulation.metrics.step_cost", "simulation.metrics.kv_read", "simulation.metrics.time_series",
    "simulation.metrics.admission_hits", "simulation.metrics.request_timing", "simulation.metrics.percentiles",
)


def is_compiled(module_name: str) -> bool:
    """Whether hkv.runtime.<module_name> (dotted, e.g. "kv_cache.block_pool") was loaded from an extension module."""
    path = getattr(importlib.import_module(f"hkv.runtime.{module_name}"), "__file__", None) or ""
    return path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def runtime_build() -> str:
    """"mypyc" when the runtime's hot modules are compiled, else "python"."""
    return "mypyc" if is_compiled("kv_cache.block_pool") else "python"
