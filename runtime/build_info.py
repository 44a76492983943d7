"""Which build of the simulation path is running: pure Python or compiled with mypyc.

A compiled install (`HKV_COMPILE=1`, see setup.py) replaces COMPILED_MODULES with extension
modules of the same names; results are identical, only speed differs. This file imports nothing
of hkv at module level: setup.py reads COMPILED_MODULES from it before hkv is installed.
"""

from __future__ import annotations

import importlib
import importlib.machinery

# The block pool, the managers, the coordinator, the scheduler and the simulator loop: the
# modules every simulated step goes through.
COMPILED_MODULES = (
    "free_block_queue", "block_pool", "block_hash", "request", "hit_point_counter",
    "kind_manager", "full_attention_manager", "sliding_window_manager", "chunked_local_manager",
    "recurrent_state_manager", "kv_cache_coordinator", "lru_eviction", "group_aware_eviction",
    "kv_cache_manager", "scheduler", "scheduler_output", "simulator",
)


def is_compiled(module_name: str) -> bool:
    """Whether hkv.runtime.<module_name> was loaded from an extension module."""
    path = getattr(importlib.import_module(f"hkv.runtime.{module_name}"), "__file__", None) or ""
    return path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def runtime_build() -> str:
    """"mypyc" when the runtime's hot modules are compiled, else "python"."""
    return "mypyc" if is_compiled("block_pool") else "python"
