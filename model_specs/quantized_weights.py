"""Weight bytes of quantized checkpoints, estimated from the config (no safetensors at hand).

    mxfp4 (gpt-oss): MoE expert matrices in MXFP4 = 4-bit values + one 8-bit scale per 32 values
                     (4.25 bits per parameter); attention, router, embeddings, lm_head, norms and
                     biases stay in the model dtype (the config's modules_to_not_convert).
    fp8 (DeepSeek-V3 block fp8, Qwen FP8 ...): every decoder linear weight in 1 byte plus one fp32
                     scale per 128x128 block; embeddings, lm_head and norms stay in the model dtype.
Other methods return None (the caller falls back to num_params x dtype bytes and says so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

FP8_BLOCK = 128


def _embedding_params(config: Mapping[str, Any]) -> int:
    tied = bool(config.get("tie_word_embeddings", False))
    return int(config["vocab_size"]) * int(config["hidden_size"]) * (1 if tied else 2)


def _mxfp4(config: Mapping[str, Any], num_params: int, dtype_bytes: int) -> int:
    experts = int(config.get("num_local_experts") or config.get("num_experts") or 0)
    if not experts:
        return num_params * dtype_bytes
    # gate_up [E, hidden, 2 x inter] + down [E, inter, hidden] per layer
    expert_params = (int(config["num_hidden_layers"]) * experts * 3 * int(config["hidden_size"])
                     * int(config["intermediate_size"]))
    rest = num_params - expert_params
    return expert_params * 17 // 32 + rest * dtype_bytes  # 4.25 bits = 17/32 bytes


def _fp8(config: Mapping[str, Any], num_params: int, dtype_bytes: int) -> int:
    kept = _embedding_params(config)
    linear = num_params - kept
    scales = linear // (FP8_BLOCK * FP8_BLOCK) * 4
    return linear + scales + kept * dtype_bytes


_BY_METHOD: dict[str, Callable[[Mapping[str, Any], int, int], int]] = {"mxfp4": _mxfp4, "fp8": _fp8}


def quantized_weights_bytes(config: Mapping[str, Any], num_params: int, dtype_bytes: int) -> int | None:
    """Estimated checkpoint bytes for a quantized config; None when not quantized or unknown."""
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        return None
    estimate = _BY_METHOD.get(str(quant.get("quant_method", "")).lower())
    return None if estimate is None else estimate(config, num_params, dtype_bytes)
