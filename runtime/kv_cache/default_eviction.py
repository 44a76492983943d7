"""Which eviction policy a layout gets when the user does not choose: the one that won on traffic.

Measured on the public Mooncake conversation trace (12,031 requests, H100, `hkv simulate`
defaults; benchmarks/bench_traces.py), first-admission prefix hits:

    Qwen3-Next-80B (TP 4, GDN + full):  hkv   LRU 7.99 %  group-aware 7.24 %
                                        vllm  LRU 5.70 %  group-aware 5.39 %
    Gemma-3-27B (TP 2, sliding + full): hkv   LRU 4.25 %  group-aware 4.29 %
                                        vllm  LRU 4.25 %  group-aware 4.29 %

Group-aware eviction protects what a running request releases early at a branch point; with
sliding windows that is a window a shared prefix needs, and it wins (also on the synthetic
sessions and shared-prompt workloads of bench_simulate.py). With recurrent groups the early
releases are old checkpoints, and protecting them cost hits on the trace. So: LRU for a layout
with a recurrent group, group-aware otherwise. Every layout of a model has the same kinds, so
`hkv simulate` asks its primary layout once.
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import Layout
from hkv.runtime.kv_cache.cache_config import EvictionPolicy


def default_eviction_policy(layout: Layout) -> EvictionPolicy:
    """LRU when the layout has a recurrent group, else GROUP_AWARE (module docstring)."""
    if any(g.kind is CacheKind.RECURRENT for g in layout.groups):
        return EvictionPolicy.LRU
    return EvictionPolicy.GROUP_AWARE
