"""What `hkv verify` tells vLLM: the plan's settings as `vllm.LLM` keyword arguments, translated for
the platform vLLM runs on so that the engine faces the situation hkv planned for.

Translations (each one said in the output when applied):

* cpu, scheduling: vLLM's CPU platform forces synchronous scheduling (platforms/cpu.py), so its
  in-flight token allowance is T = 1 x max_num_batched_tokens, while hkv's `vllm` layout plans for
  the GPU default, asynchronous scheduling, T = 2 x max_num_batched_tokens. vLLM is given twice the
  plan's max_num_batched_tokens: the same T (and a per-step token budget twice the plan's).
* cpu, block size: vLLM's CPU_ATTN kernels run multiples of 32 tokens only (a 16-token block
  gives its sliding-window layers 32-token blocks and fails full attention), and the CPU platform
  would default to 128. Without --block-size the plan's GPU block size (16 for most backends) is
  rounded up to a multiple of 32, planned with the CPU backends' rules (`platform_plan_config`) and
  passed explicitly (before Mamba alignment: vLLM grows it itself, as hkv does); a given block size
  CPU_ATTN cannot run is refused.
* cpu, log line: vLLM prints "CPU KV cache size" where hkv says "GPU"; the prediction is compared
  with the device word swapped.

On every platform, `--dtype auto` (hkv: the config's dtype) is passed as that dtype by name: vLLM's
own auto casts a float32 config to 16 bits, which would halve the bytes per block hkv planned.

The memory is the plan's budget (`MemoryBudget.available_bytes`) as `kv_cache_memory_bytes`, which
vLLM uses as is instead of profiling.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.attention_backend import nearest_cpu_block_size, plan_block_size
from hkv.planner.auto_dtype import FLOAT32_BYTES, auto_downcast_dtype
from hkv.planner.budget.memory_budget import MemoryBudget
from hkv.planner.plan_config import PlanConfig

# hkv dtype spellings vLLM does not take -> vLLM's; others ("auto", "bfloat16", "float32", ...) pass as is.
_VLLM_DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# --dtype auto: the config's dtype, known to hkv by its size only; 2 bytes plans the same either way.
_DTYPE_OF_BYTES = {4: "float32", 2: "bfloat16"}


@dataclass(frozen=True)
class EngineSettings:
    llm_args: dict[str, Any]  # keyword arguments of vllm.LLM
    device_name: str  # the word vLLM prints before "KV cache size"
    translations: tuple[str, ...]  # platform differences applied, one sentence each


def device_name(device_type: str) -> str:
    """vLLM's word for the KV cache's device (kv_cache_utils._kv_cache_device_name)."""
    return "GPU" if device_type == "cuda" else device_type.upper()


def platform_plan_config(model: ModelSpec, cfg: PlanConfig, device_type: str) -> PlanConfig:
    """`cfg` for vLLM on `device_type`: unchanged on CUDA; on CPU planned with the CPU backends and
    a block size they run: the given one (InvalidInputError naming CPU_ATTN's sizes when it cannot
    run it), else the GPU plan's rounded up to CPU_ATTN's 32-token step."""
    if device_type != "cpu":
        return cfg
    requested = cfg.block_size
    if requested is None:
        requested = nearest_cpu_block_size(plan_block_size(model, cfg).block_size)
    cpu = replace(cfg, cpu_engine=True, block_size=requested)
    return replace(cpu, block_size=plan_block_size(model, cpu).block_size)


def engine_settings(model: str, model_dtype_bytes: int, cfg: PlanConfig, budget: MemoryBudget,
                    max_model_len: int, device_type: str) -> EngineSettings:
    """The vllm.LLM arguments for the plan of `model` (weights of `model_dtype_bytes` per element in
    its config) under `cfg` (budget = its memory budget, max_model_len = the plan's resolved
    length), on a vLLM whose platform is `device_type`."""
    translations: list[str] = []
    dtype = _VLLM_DTYPE_NAMES.get(cfg.dtype, cfg.dtype)
    if dtype == "auto" and model_dtype_bytes in _DTYPE_OF_BYTES:
        cast = auto_downcast_dtype(cfg.gpu, cfg.cpu_engine) if model_dtype_bytes == FLOAT32_BYTES else None
        dtype = cast or _DTYPE_OF_BYTES[model_dtype_bytes]
        translations.append(f"dtype: hkv's auto (the config's dtype, a float32 one cast as vLLM casts it on the "
                            f"plan's platform, or kept where that is unknown) passed as {dtype}")
    max_num_batched_tokens = budget.max_num_batched_tokens
    name = device_name(device_type)
    if device_type == "cpu":
        max_num_batched_tokens *= 2
        translations += [
            f"scheduling: vLLM on CPU schedules synchronously (T = 1 x max_num_batched_tokens); hkv plans "
            f"for asynchronous GPU scheduling (T = 2 x {budget.max_num_batched_tokens:,}), so vLLM gets "
            f"max_num_batched_tokens {max_num_batched_tokens:,} (same T, twice the step budget)",
            f"block size: passed explicitly ({cfg.block_size}); vLLM's CPU_ATTN runs multiples of 32 only "
            "(a GPU plan's 16 becomes 32) and vLLM on CPU would default to 128",
            "log line: vLLM says \"CPU KV cache size\" where hkv says \"GPU\"; compared with the word swapped",
        ]
    llm_args: dict[str, Any] = {
        "model": model,
        "kv_cache_memory_bytes": budget.available_bytes,
        "block_size": cfg.block_size,
        "max_model_len": max_model_len,
        "max_num_batched_tokens": max_num_batched_tokens,
        "max_num_seqs": budget.max_num_seqs,
        "tensor_parallel_size": cfg.tp,
        "pipeline_parallel_size": cfg.pp,
        "dtype": dtype,
        "kv_cache_dtype": cfg.kv_cache_dtype,
        "enable_prefix_caching": cfg.enable_prefix_caching,
        "disable_log_stats": False,  # the preemption counter lives in the stats
        "skip_tokenizer_init": True,  # prompts are token ids; a model folder needs no tokenizer
        "seed": 0,
    }
    if cfg.mamba_ssm_dtype != "auto":
        llm_args["mamba_ssm_cache_dtype"] = _VLLM_DTYPE_NAMES.get(cfg.mamba_ssm_dtype, cfg.mamba_ssm_dtype)
    if device_type == "cpu":
        llm_args["enforce_eager"] = True  # no graph capture: start-up in seconds, same KV cache
    return EngineSettings(llm_args, name, tuple(translations))
