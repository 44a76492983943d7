"""Which quantization format a model loads with: the checkpoint's quant_method (or the method vLLM
substitutes for it on that model type), else vLLM's `--quantization` override (fp8: online
per-tensor FP8; bitsandbytes: in-flight nf4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from hkv.planner.budget.quantization.auto_round import AutoRound
from hkv.planner.budget.quantization.awq import Awq
from hkv.planner.budget.quantization.base import QuantFormat, Unquantized
from hkv.planner.budget.quantization.bitsandbytes import IN_FLIGHT_BNB, BitsAndBytes
from hkv.planner.budget.quantization.compressed_tensors import CompressedTensors
from hkv.planner.budget.quantization.deepseek_v4_fp8 import DeepseekV4Fp8
from hkv.planner.budget.quantization.fp8 import ONLINE_FP8, Fp8
from hkv.planner.budget.quantization.gptq import Gptq
from hkv.planner.budget.quantization.modelopt import ModelOpt
from hkv.planner.budget.quantization.mxfp4 import Mxfp4
from hkv.planner.errors import InvalidInputError

# quant_method (as configs and vLLM spell it) -> parser of the quantization_config
FORMATS: dict[str, Callable[[Mapping[str, Any]], QuantFormat]] = {
    "awq": Awq.from_config,
    "awq_marlin": Awq.from_config,
    "gptq": Gptq.from_config,
    "gptq_marlin": Gptq.from_config,
    "compressed-tensors": CompressedTensors.from_config,
    "compressed_tensors": CompressedTensors.from_config,
    "modelopt": ModelOpt.from_config,
    "modelopt_fp4": ModelOpt.from_config,
    "modelopt_mixed": ModelOpt.from_config,
    "mxfp4": Mxfp4.from_config,
    "fp8": Fp8.from_config,
    "deepseek_v4_fp8": DeepseekV4Fp8.from_config,
    "auto-round": AutoRound.from_config,
    "auto_round": AutoRound.from_config,
    "intel/auto-round": AutoRound.from_config,
    "inc": AutoRound.from_config,
    "bitsandbytes": BitsAndBytes.from_config,
}
# (model_type, quant_method) -> the method a vLLM config's override_quantization_method picks instead
MODEL_METHODS: dict[tuple[str, str], str] = {("deepseek_v4", "fp8"): "deepseek_v4_fp8"}
# --quantization on a checkpoint with no quantization_config: methods vLLM applies at load.
ONLINE: dict[str, QuantFormat] = {"fp8": ONLINE_FP8, "bitsandbytes": IN_FLIGHT_BNB}


def quant_format(
    quantization_config: Mapping[str, Any] | None, override: str | None, model_type: str = ""
) -> QuantFormat | None:
    """The format of the weights as loaded: Unquantized for a plain checkpoint, None for a
    quant_method hkv does not model (the caller falls back to parameter counts, with a wide band)."""
    if quantization_config is not None and quantization_config.get("quant_method"):
        method = str(quantization_config["quant_method"]).lower()
        parse = FORMATS.get(MODEL_METHODS.get((model_type, method), method))
        fmt = None if parse is None else parse(quantization_config)
        if isinstance(fmt, Gptq) and override is not None and override.lower() == "gptq":
            return replace(fmt, marlin=False)  # vLLM: "you specified quantization=gptq explicitly, so forcing gptq"
        return fmt
    if override is None:
        return Unquantized()
    if override.lower() in ONLINE:
        return ONLINE[override.lower()]
    raise InvalidInputError(
        f"quantization {override!r} needs a checkpoint quantized that way (this config has no "
        "quantization_config); "
        f"on an unquantized checkpoint vLLM quantizes at load only with: {', '.join(ONLINE)}",
        fields=("quantization",),
    )
