"""Workloads of the speed comparison, named by one string."""

from __future__ import annotations

from pathlib import Path

from simulate_speed.mooncake import load_mooncake

from hkv.runtime.simulation.workload_gen import generate_workload
from hkv.runtime.simulation.workload_request import WorkloadRequest
from hkv.runtime.simulation.workload_spec import parse_workload

MOONCAKE_TRACE = Path("/work/shared/data/traces/mooncake_conversation_trace.jsonl")
SHARED_PREFIX = "shared-prefix:n={n},prefix=1024,prompt=64-512,output=16-128,prefixes=16,seed=1"


def build_workload(text: str) -> list[WorkloadRequest]:
    """`mooncake:N` (first N requests of the trace; 0: all) or a workload spec. The trace is read
    by hkv's own reader where the tree has it (hkv.runtime.simulation.traces), else by the
    benchmark's loader, which builds the same token ids (simulate_speed/mooncake.py)."""
    if text.startswith("mooncake:"):
        limit = int(text.split(":", 1)[1]) or None
        try:
            from hkv.runtime.simulation.traces.trace_options import TraceOptions
            from hkv.runtime.simulation.traces.trace_source import TraceSource
            from hkv.runtime.simulation.traces.trace_window import TraceWindow
        except ImportError:  # a tree before the trace readers
            return load_mooncake(str(MOONCAKE_TRACE), limit)
        return list(TraceSource(MOONCAKE_TRACE, TraceOptions(window=TraceWindow(limit=limit))))
    return generate_workload(parse_workload(text))
