"""Plan options shared by `plan` and `simulate`: Annotated aliases and the PlanConfig they build.

Defaults live in PlanConfig; the options default to None and only override what was given.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any

import typer

from hkv.planner.plan_config import (
    EXPECTED_AVG_ENV, PlanConfig, expected_avg_seq_len_from_env, parse_positive_int,
)
from hkv.planner.sizes import parse_size

_DEFAULTS = {f.name: f.default for f in fields(PlanConfig)}

GpuOpt = Annotated[str | None, typer.Option("--gpu", help=f"GPU name (see `hkv gpus`) [default: {_DEFAULTS['gpu']}]")]
GpuMemoryOpt = Annotated[str | None, typer.Option("--gpu-memory", help="GPU memory SIZE instead of --gpu, e.g. 80GiB")]
UtilOpt = Annotated[float | None, typer.Option("--gpu-memory-utilization", help=f"share of GPU memory for vLLM [default: {_DEFAULTS['gpu_memory_utilization']}]")]
AvailableOpt = Annotated[str | None, typer.Option("--available-kv-memory", help="exact KV cache budget per GPU (SIZE), like vLLM's kv_cache_memory_bytes")]
TpOpt = Annotated[int | None, typer.Option("--tp", help="tensor parallel size [default: 1]")]
PpOpt = Annotated[int | None, typer.Option("--pp", help="pipeline parallel size [default: 1]")]
DtypeOpt = Annotated[str | None, typer.Option("--dtype", help="weight dtype: auto, bfloat16, float16, float32 [default: auto]")]
KvDtypeOpt = Annotated[str | None, typer.Option("--kv-cache-dtype", help="auto or fp8 [default: auto]")]
SsmDtypeOpt = Annotated[str | None, typer.Option("--mamba-ssm-dtype", help="recurrent state dtype [default: auto = config]")]
BlockSizeOpt = Annotated[int | None, typer.Option("--block-size", help=f"tokens per block [default: {_DEFAULTS['block_size']}]")]
MaxLenOpt = Annotated[int | None, typer.Option("--max-model-len", help="request length to plan for [default: the model's]")]
MnbtOpt = Annotated[int | None, typer.Option("--max-num-batched-tokens", help="token budget per step [default: vLLM's for the GPU class]")]
MaxSeqsOpt = Annotated[int | None, typer.Option("--max-num-seqs", help=f"max running requests [default: {_DEFAULTS['max_num_seqs']}]")]
VllmLogOpt = Annotated[str | None, typer.Option("--vllm-log", help="vLLM capacity log format: current or legacy (<= v0.23) [default: current]")]
AvgLenOpt = Annotated[str | None, typer.Option("--expected-avg-seq-len", help=f"split of separate pools, tokens [env: {EXPECTED_AVG_ENV}; default: max model len]")]
ConcurrencyOpt = Annotated[int | None, typer.Option("--concurrency", help="also report the max context length at this many concurrent requests")]
NoPrefixOpt = Annotated[bool, typer.Option("--no-prefix-caching", help="plan with prefix caching off (Mamba 'none' mode)")]
LayoutOpt = Annotated[str | None, typer.Option("--layout", help="primary layout: hkv, vllm, vllm-no-hybrid, partitioned [default: hkv]")]


def build_plan_config(**options: Any) -> PlanConfig:
    """PlanConfig from CLI option values (None = default). Raises InvalidInputError."""
    values: dict[str, Any] = {}
    mapping = {"gpu": "gpu", "utilization": "gpu_memory_utilization", "tp": "tp", "pp": "pp",
               "dtype": "dtype", "kv_cache_dtype": "kv_cache_dtype", "mamba_ssm_dtype": "mamba_ssm_dtype",
               "block_size": "block_size", "max_model_len": "max_model_len",
               "max_num_batched_tokens": "max_num_batched_tokens", "max_num_seqs": "max_num_seqs",
               "vllm_log": "vllm_log", "concurrency": "concurrency", "layout": "primary_layout"}
    for option, field_name in mapping.items():
        if options.get(option) is not None:
            values[field_name] = options[option]
    if options.get("gpu_memory") is not None:
        values["gpu_memory_bytes"] = parse_size(options["gpu_memory"], option="--gpu-memory")
    if options.get("available_kv_memory") is not None:
        values["available_kv_memory_bytes"] = parse_size(options["available_kv_memory"],
                                                         option="--available-kv-memory")
    if options.get("expected_avg_seq_len") is not None:
        values["expected_avg_seq_len"] = parse_positive_int(options["expected_avg_seq_len"],
                                                            name="--expected-avg-seq-len")
    else:
        values["expected_avg_seq_len"] = expected_avg_seq_len_from_env()
    if options.get("no_prefix_caching"):
        values["enable_prefix_caching"] = False
    return PlanConfig(**values)
