"""SGLang's `--kv-cache-dtype auto` for a checkpoint that quantizes its KV cache.

With "auto", SGLang's model runner keeps the model's dtype unless the loaded quantization config
reports `kv_cache_quant_algo` "FP8" (any case); then the cache is fp8_e4m3 (float8_e4m3fn)
(srt/mem_cache/kv_cache_dtype.py `configure_kv_cache_dtype` in 0.5.23; ModelRunner.
configure_kv_cache_dtype in srt/model_executor/model_runner.py in 0.5.10). The quantization
configs that report it (srt/layers/quantization/):

| quant_method                     | kv_cache_quant_algo is "FP8" when                                  |
|----------------------------------|--------------------------------------------------------------------|
| modelopt, modelopt_fp4, modelopt_mixed, flat (config.json) | `kv_cache_scheme` is {type: float, num_bits: 8}; a string scheme FP8 / FLOAT8; without a scheme, `kv_cache_quant_algo` |
| the same, nested (hf_quant_config.json's `quantization`)   | `quantization.kv_cache_quant_algo`           |
| fp8                              | `kv_cache_quant_algo` (Fp8Config.from_config)                      |
| compressed-tensors (from 0.5.23) | `kv_cache_scheme` is static, symmetric, per-tensor 8-bit float     |
|                                  | (CompressedTensorsConfig.kv_cache_quant_algo)                      |

NVFP4 KV ("NVFP4") is not resolved by "auto": it stays the model's dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FP8_KV = "fp8_e4m3"
_MODELOPT_METHODS = ("modelopt", "modelopt_fp4", "modelopt_mixed")


def resolve_auto_kv_cache_dtype(kv_cache_dtype: str, quantization_config: Mapping[str, Any] | None, *,
                                compressed_tensors_kv: bool) -> str:
    """`kv_cache_dtype`, or fp8_e4m3 where it is "auto" and the checkpoint's quantization config
    calibrated an FP8 KV cache (module docstring). `compressed_tensors_kv`: the release reads
    compressed-tensors' kv_cache_scheme too."""
    if kv_cache_dtype != "auto" or not quantization_config:
        return kv_cache_dtype
    algo = _kv_cache_quant_algo(quantization_config, compressed_tensors_kv=compressed_tensors_kv)
    return FP8_KV if isinstance(algo, str) and algo.upper() == "FP8" else kv_cache_dtype


def _kv_cache_quant_algo(quant: Mapping[str, Any], *, compressed_tensors_kv: bool) -> Any:
    method = str(quant.get("quant_method", "")).lower()
    if method in _MODELOPT_METHODS or not method and isinstance(quant.get("quantization"), Mapping):
        if quant.get("quant_algo") is None and isinstance(quant.get("quantization"), Mapping):
            return quant["quantization"].get("kv_cache_quant_algo")  # nested: hf_quant_config.json
        scheme = quant.get("kv_cache_scheme")
        if isinstance(scheme, Mapping):
            return "FP8" if scheme.get("type") == "float" and scheme.get("num_bits") == 8 else None
        if isinstance(scheme, str):
            return "FP8" if scheme.strip().upper() in ("FP8", "FLOAT8") else None
        return quant.get("kv_cache_quant_algo")
    if method == "fp8":
        return quant.get("kv_cache_quant_algo")
    if method == "compressed-tensors" and compressed_tensors_kv:
        scheme = quant.get("kv_cache_scheme")
        static_fp8 = (isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 8
                      and scheme.get("strategy") == "tensor" and scheme.get("symmetric", True)
                      and not scheme.get("dynamic", False))
        return "FP8" if static_fp8 else None
    return None
