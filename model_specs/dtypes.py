"""Element sizes of the dtype names found in HF configs and safetensors headers."""

from __future__ import annotations

from hkv.model_specs.errors import InvalidConfigError

# torch_dtype / dtype / mamba_ssm_cache_dtype values as written in config.json, plus CLI spellings.
_CONFIG_DTYPE_BYTES: dict[str, int] = {
    "float32": 4, "fp32": 4, "float": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1, "int8": 1, "uint8": 1,
}

# safetensors header dtype codes (https://github.com/huggingface/safetensors, format spec).
_SAFETENSORS_DTYPE_BYTES: dict[str, int] = {
    "F64": 8, "I64": 8, "U64": 8,
    "F32": 4, "I32": 4, "U32": 4,
    "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
    "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1,
}

DEFAULT_DTYPE_BYTES = 2  # configs without torch_dtype are served in bf16 by vLLM's "auto"


def dtype_bytes(name: str, *, attribute: str = "dtype") -> int:
    """Bytes per element of a config dtype name such as "bfloat16" or "torch.float32"."""
    key = str(name).removeprefix("torch.").lower()
    if key not in _CONFIG_DTYPE_BYTES:
        known = ", ".join(sorted(_CONFIG_DTYPE_BYTES))
        raise InvalidConfigError(f"{attribute}={name!r} is not a known dtype; expected one of: {known}")
    return _CONFIG_DTYPE_BYTES[key]


def safetensors_dtype_bytes(code: str) -> int | None:
    """Bytes per element of a safetensors dtype code ("BF16", "F32", ...); None for sub-byte or unknown."""
    return _SAFETENSORS_DTYPE_BYTES.get(code)
