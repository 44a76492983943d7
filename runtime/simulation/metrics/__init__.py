"""hkv.runtime.simulation.metrics: what a replay measures beyond counts, for trace users.

It owns the per-request timings (queueing delay, a TTFT proxy, latency) and their percentiles,
the prefix hits split by first admission and re-admission, evictions in tokens comparable across
layouts, the bounded time series (running, waiting, KV use, hit rate over simulated time) and the
roofline step-time estimate. The simulator feeds them; each result is a frozen, JSON-safe
dataclass inside SimulationReport. Pure Python, no torch.
"""
