"""Helpers of benchmarks/bench_simulate.py's speed comparison: a Mooncake trace loader local to
the benchmark, one replay measured in a subprocess, and the runs of a tree of another commit."""
