"""vLLM's `--dtype auto` on the plan's platform: which dtype a checkpoint's weights, activations and
KV cache run in when no dtype is given.

vLLM 0.32 / 0.33 (`vllm/config/model.py` `_resolve_auto_dtype`) keeps the config's dtype, except a
float32 config, which it casts to the platform's first supported dtype (`supported_dtypes`):

- CUDA, compute capability >= 8.0 (Ampere and later): bfloat16;
- CUDA, 6.0 <= capability < 8.0 (Pascal, Volta, Turing: T4, V100): float16;
- ROCm and the CPU platform on x86 / aarch64 Linux: bfloat16 (the Platform default list; the CPU
  platform's list starts with bfloat16 too, so a float32 checkpoint is not kept on CPU either).

With no GPU named (a bare memory size) the platform is unknown and the config's dtype stands: 4
bytes for a float32 checkpoint, the upper bound. Not modelled: vLLM keeps float32 for Gemma 2 / 3
and GLM-4 on pre-Ampere GPUs (float16 is refused for them), and pooling models prefer float16.
"""

from __future__ import annotations

from hkv.planner.budget.gpu_table import get_gpu

FLOAT32_BYTES = 4
HALF_BYTES = 2  # bfloat16 and float16
BF16_MIN_CAPABILITY = (8, 0)
FP16_MIN_CAPABILITY = (6, 0)


def auto_downcast_dtype(gpu: str | None, cpu_engine: bool) -> str | None:
    """The dtype vLLM's auto casts a float32 config to on this platform (the first of its
    supported_dtypes); None where the platform is unknown (no GPU named, not the CPU engine)."""
    if cpu_engine:
        return "bfloat16"
    if gpu is None:
        return None
    capability = get_gpu(gpu).compute_capability
    if capability is None or capability >= BF16_MIN_CAPABILITY:  # ROCm, or Ampere and later
        return "bfloat16"
    return "float16" if capability >= FP16_MIN_CAPABILITY else "float32"


def auto_dtype_bytes(config_dtype_bytes: int, gpu: str | None, cpu_engine: bool) -> int:
    """Element size of the weights under `--dtype auto` for a config whose dtype has
    `config_dtype_bytes` per element."""
    if config_dtype_bytes != FLOAT32_BYTES:
        return config_dtype_bytes
    target = auto_downcast_dtype(gpu, cpu_engine)
    return FLOAT32_BYTES if target in (None, "float32") else HALF_BYTES
