"""Serving engines the planner predicts: each subpackage owns one engine's rules on top of the
shared budget (`planner/budget/`) and layout contract (`planner/layout.py`).

    vllm/    vLLM's grouping, release rules, start-up log format and `vllm serve` command
    sglang/  SGLang's token pools, mem_fraction_static, start-up lines and launch command
"""
