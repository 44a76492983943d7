"""Which quantization format a model loads with: the checkpoint's quant_method (or the method vLLM
substitutes for it on that model type), else vLLM's `--quantization` override (fp8: online
per-tensor FP8; bitsandbytes: in-flight nf4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast

from hkv.model_specs.lazy_import import resolve
from hkv.planner.budget.quantization.base import QuantFormat, Unquantized
from hkv.planner.errors import InvalidInputError

_Q = "hkv.planner.budget.quantization."
# quant_method (as configs and vLLM spell it) -> "module:class" of the format parsing its
# quantization_config (a from_config classmethod), imported when a checkpoint uses it (issue 34)
FORMATS: dict[str, str] = {
    "awq": _Q + "awq:Awq",
    "awq_marlin": _Q + "awq:Awq",
    "gptq": _Q + "gptq:Gptq",
    "gptq_marlin": _Q + "gptq:Gptq",
    "compressed-tensors": _Q + "compressed_tensors:CompressedTensors",
    "compressed_tensors": _Q + "compressed_tensors:CompressedTensors",
    "modelopt": _Q + "modelopt:ModelOpt",
    "modelopt_fp4": _Q + "modelopt:ModelOpt",
    "modelopt_mixed": _Q + "modelopt:ModelOpt",
    "mxfp4": _Q + "mxfp4:Mxfp4",
    "fp8": _Q + "fp8:Fp8",
    "deepseek_v4_fp8": _Q + "deepseek_v4_fp8:DeepseekV4Fp8",
    "auto-round": _Q + "auto_round:AutoRound",
    "auto_round": _Q + "auto_round:AutoRound",
    "intel/auto-round": _Q + "auto_round:AutoRound",
    "inc": _Q + "auto_round:AutoRound",
    "bitsandbytes": _Q + "bitsandbytes:BitsAndBytes",
}
# (model_type, quant_method) -> the method a vLLM config's override_quantization_method picks instead
MODEL_METHODS: dict[tuple[str, str], str] = {("deepseek_v4", "fp8"): "deepseek_v4_fp8"}
# --quantization on a checkpoint with no quantization_config: methods vLLM applies at load
# ("module:constant" of their QuantFormat).
ONLINE: dict[str, str] = {"fp8": _Q + "fp8:ONLINE_FP8", "bitsandbytes": _Q + "bitsandbytes:IN_FLIGHT_BNB"}


def _parser(method: str) -> Callable[[Mapping[str, Any]], QuantFormat] | None:
    """The from_config of the format FORMATS names for `method`; None for one hkv does not model."""
    ref = FORMATS.get(method)
    if ref is None:
        return None
    return cast(Callable[[Mapping[str, Any]], QuantFormat], resolve(ref + ".from_config"))


def quant_format(
    quantization_config: Mapping[str, Any] | None, override: str | None, model_type: str = ""
) -> QuantFormat | None:
    """The format of the weights as loaded: Unquantized for a plain checkpoint, None for a
    quant_method hkv does not model (the caller falls back to parameter counts, with a wide band)."""
    if quantization_config is not None and quantization_config.get("quant_method"):
        method = str(quantization_config["quant_method"]).lower()
        parse = _parser(MODEL_METHODS.get((model_type, method), method))
        fmt = None if parse is None else parse(quantization_config)
        if override is not None and override.lower() == "gptq":
            from hkv.planner.budget.quantization.gptq import Gptq
            if isinstance(fmt, Gptq):  # vLLM: "you specified quantization=gptq explicitly, so forcing gptq"
                return replace(fmt, marlin=False)
        return fmt
    if override is None:
        return Unquantized()
    if override.lower() in ONLINE:
        return cast(QuantFormat, resolve(ONLINE[override.lower()]))
    raise InvalidInputError(
        f"quantization {override!r} needs a checkpoint quantized that way (this config has no "
        "quantization_config); "
        f"on an unquantized checkpoint vLLM quantizes at load only with: {', '.join(ONLINE)}",
        fields=("quantization",),
    )
