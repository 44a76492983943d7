"""Helpers of benchmarks/bench_blind_budget.py: evaluate one start-up record, summarise, render."""
