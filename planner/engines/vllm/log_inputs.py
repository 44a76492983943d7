"""The plan inputs a vLLM log states: its engine settings as PlanConfig fields, its KV budget band.

vLLM prints "Available KV cache memory" rounded to 0.01 GiB, so a logged 37.5 stands for every
budget b with round(b / GiB, 2) == 37.5: b in [37.495, 37.505) GiB. `budget_band` gives that
range in bytes; the explanation searches it for the budgets that reproduce the logged numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from hkv.planner.budget.gpu_table import GIB
from hkv.planner.engines.vllm.log import VllmLog
from hkv.planner.errors import InvalidInputError

# vLLM's engine argument -> PlanConfig field, for the settings that pass through unchanged.
_SAME_MEANING = {
    "max_model_len": "max_model_len",
    "tensor_parallel_size": "tp",
    "pipeline_parallel_size": "pp",
    "block_size": "block_size",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "max_num_seqs": "max_num_seqs",
    "enable_prefix_caching": "enable_prefix_caching",
    "mamba_ssm_cache_dtype": "mamba_ssm_dtype",
}
_WEIGHT_DTYPES = {"bfloat16", "float16", "float32", "half", "float", "auto"}


def log_plan_fields(log: VllmLog) -> dict[str, Any]:
    """PlanConfig keyword arguments for what the log's engine settings say (no budget, no
    version: see budget_band and the explanation's version rules)."""
    args = log.args
    out: dict[str, Any] = {field: args[name] for name, field in _SAME_MEANING.items()
                           if args.get(name) is not None}
    if "max_model_len" not in out and log.concurrency_len is not None:
        out["max_model_len"] = log.concurrency_len
    kv_dtype = args.get("kv_cache_dtype")
    if kv_dtype is not None:
        out["kv_cache_dtype"] = "fp8" if str(kv_dtype).startswith("fp8") else "auto"
    dtype = str(args.get("dtype", "auto")).removeprefix("torch.")
    if dtype in _WEIGHT_DTYPES:
        out["dtype"] = dtype
    speculative = args.get("speculative_config")
    if isinstance(speculative, Mapping) and speculative.get("num_speculative_tokens"):
        out["speculative_tokens"] = int(speculative["num_speculative_tokens"])
    if "mamba_ssm_dtype" in out and out["mamba_ssm_dtype"] == "auto":
        del out["mamba_ssm_dtype"]
    return out


def hybrid_manager_disabled_by_flag(log: VllmLog) -> bool:
    return bool(log.args.get("disable_hybrid_kv_cache_manager"))


def budget_band(log: VllmLog, given_bytes: int | None) -> tuple[int, int]:
    """[lo, hi] bytes: the given budget exactly, else every budget the logged GiB rounds from.
    InvalidInputError when neither is there."""
    if given_bytes is not None:
        return given_bytes, given_bytes
    if log.available_kv_gib is None:
        raise InvalidInputError("no 'Available KV cache memory' line in the log: pass available_kv_memory "
                                "(the budget vLLM printed, e.g. 37.5GiB)", fields=("available_kv_memory",))
    gib = Decimal(log.available_kv_gib)
    half = Decimal("0.005")
    lo = int(((gib - half) * GIB).to_integral_value(rounding="ROUND_CEILING"))
    hi = int(((gib + half) * GIB).to_integral_value(rounding="ROUND_FLOOR"))
    return max(1, lo), hi
