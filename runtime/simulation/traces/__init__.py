"""hkv.runtime.simulation.traces: request traces read from files, streamed into the simulator.

It owns the trace formats hkv reads (Mooncake JSONL, Azure LLM inference CSV, BurstGPT CSV and
hkv's own JSONL), telling them apart by content, parsing their lines into cheap TraceRows
(lengths, block ids, no token arrays), the part of a trace replayed (a time window, a request
limit, requests too long for max_model_len), and TraceSource: a re-iterable workload that re-reads
the file on each pass and builds a request's token arrays only when the simulator pulls it.
"""
