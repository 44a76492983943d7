"""hkv.runtime.scheduler: continuous batching over the KV cache manager.

It owns the waiting and running queues, the per-step token budget and sequence cap, chunked
prefill, admission and recompute preemption, and the SchedulerOutput each step hands to whatever
executes it (the simulator's fake model or the live model runner).
"""
