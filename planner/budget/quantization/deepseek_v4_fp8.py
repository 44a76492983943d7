"""DeepSeek-V4 checkpoints (vLLM `deepseek_v4_fp8`): block-FP8 linears, routed experts by `expert_dtype`.

vLLM 0.32 swaps a `quant_method: fp8` checkpoint of model_type deepseek_v4 for DeepseekV4FP8Config
(models/deepseek_v4/quant_config.py, `override_quantization_method`). Every linear stays block FP8
(Fp8Config); the routed experts follow the config's top-level `expert_dtype` (vLLM's default when it
is missing: "fp4"), which from_hf_config folds into the quantization_config hkv reads:
  fp4 (DeepSeek-V4-Flash): `get_quant_method` gives RoutedExperts Mxfp4MoEMethod
      (quantization/mxfp4.py `create_weights`): per expert, uint8 values packing two fp4 each
      (w13: 2I x H/2, w2: H x I/2 bytes) and one uint8 (ue8m0) scale per 32 inputs (2I x H/32,
      H x I/32), no bias; I is the per-rank intermediate after the backend's `maybe_roundup_sizes`
      (fused_moe/oracle/mxfp4.py `mxfp4_round_up_hidden_size_and_intermediate_size`). The backend is
      `select_deepseek_v4_mxfp4_moe_backend`'s first supported one of `_get_priority_backends`:
      10.x FlashInfer TRT-LLM MXFP8 (H -> 256, I -> 128); 9.0 Humming, which `prioritize_humming`
      puts ahead of Marlin there (I -> 64); others (8.x, 12.x such as GB10) Marlin (H -> 256,
      I -> 128). The linears' block scales are e8m0 then (`is_scale_e8m0`: 1 byte per 128 x 128).
  fp8 (DeepSeek-V4-Flash-Base): experts fall through to Fp8MoEMethod, block FP8 with fp32 scales
      like every linear.
Routed experts named in `ignored_layers` load unquantized (Fp8's skip rule does that).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.base import QuantContext
from hkv.planner.budget.quantization.fp8 import Fp8
from hkv.planner.budget.quantization.mxfp4 import EXPERT_ROLES, MARLIN, TRTLLM, UNPADDED, Backend, Mxfp4
from hkv.planner.budget.quantization.skip_rules import substring_match
from hkv.planner.errors import InvalidInputError

E8M0 = 1  # bytes of one ue8m0 (float8_e8m0fnu) scale
FP32 = 4
HUMMING = Backend("humming", 1, 64)  # falls in the round-up's default branch: intermediate -> 64
# expert_dtype -> bytes of the linears' block scales (DeepseekV4FP8Config.is_scale_e8m0)
LINEAR_SCALE_BYTES: dict[str, int] = {"fp4": E8M0, "fp8": FP32}
# compute capability major -> the MXFP4 backend vLLM picks for DeepSeek-V4 experts (others: Marlin)
BACKEND_BY_MAJOR: dict[int, Backend] = {9: HUMMING, 10: TRTLLM}


def deepseek_v4_backend(capability: tuple[int, int] | None) -> Backend:
    """The MXFP4 MoE backend of DeepSeek-V4's routed experts; unknown GPU: unpadded."""
    return UNPADDED if capability is None else BACKEND_BY_MAJOR.get(capability[0], MARLIN)


@dataclass(frozen=True)
class DeepseekV4Fp8:
    linears: Fp8
    expert_dtype: str = "fp4"
    method: str = "deepseek_v4_fp8"

    @classmethod
    def from_config(cls, q: Mapping[str, Any]) -> DeepseekV4Fp8:
        expert_dtype = str(q.get("expert_dtype") or "fp4")
        if expert_dtype not in LINEAR_SCALE_BYTES:
            raise InvalidInputError(
                f"DeepSeek-V4 expert_dtype {expert_dtype!r} is not one vLLM loads; "
                f"expected one of: {', '.join(LINEAR_SCALE_BYTES)}",
                fields=("expert_dtype",),
            )
        linears = replace(Fp8.from_config(q), scale_bytes=LINEAR_SCALE_BYTES[expert_dtype])
        return cls(linears, expert_dtype, f"deepseek_v4_fp8 ({expert_dtype} experts)")

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        mxfp4_experts = (
            self.expert_dtype == "fp4"
            and weight.role in EXPERT_ROLES
            and not substring_match(weight.module, self.linears.skip)
        )
        if mxfp4_experts:
            backend = deepseek_v4_backend(ctx.compute_capability)
            return Mxfp4().expert_bytes(weight, in_features, out_features, ctx, backend)
        return self.linears.linear_bytes(weight, in_features, out_features, ctx)
