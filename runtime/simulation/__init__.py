"""hkv.runtime.simulation: workloads replayed through the real scheduler and KV cache, no model.

It owns workload specs and their generators, JSONL traces, the simulator loop (a fake model that
emits one token per decode step) and the SimulationReport it returns. Pure Python, no torch.
"""
