"""AutoRound (Intel; vLLM `auto-round` / `inc`): int4 / int8 weights packed GPTQ-style
(`packing_format` "auto_round:auto_gptq", the default) or AWQ-style ("auto_round:auto_awq").

Bytes as GPTQ on Marlin (gptq.py): K x N x b / 8 packed values + G x N fp16 scales, plus packed
zero points G x N x b / 8 when asymmetric (`sym` false, or AWQ packing). Unquantized: modules
outside `block_name_to_quantize` / `to_quant_block_names` (comma-separated or a list; decoder
towers and MTP blocks are usually outside), and modules `extra_config` gives 16 or more bits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.base import QuantContext, bias_bytes, dense_linear_bytes, stays_dense
from hkv.planner.budget.quantization.gptq import packed_int_bytes

FULL_PRECISION_BITS = 16


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value or ())


@dataclass(frozen=True)
class AutoRound:
    bits: int = 4
    group_size: int = 128
    sym: bool = True
    blocks: tuple[str, ...] = ()
    extra: tuple[tuple[str, int, int], ...] = ()  # (module or regex, bits, group_size)
    method: str = "auto-round"

    @classmethod
    def from_config(cls, q: Mapping[str, Any]) -> AutoRound:
        bits, group = int(q.get("bits", 4)), int(q.get("group_size", 128))
        sym = bool(q.get("sym", True)) and "awq" not in str(q.get("packing_format", ""))
        blocks = _names(q.get("block_name_to_quantize") or q.get("to_quant_block_names"))
        extra = tuple(
            (str(m), int(v.get("bits", bits)), int(v.get("group_size", group)))
            for m, v in (q.get("extra_config") or {}).items()
            if isinstance(v, Mapping)
        )
        return cls(bits, group, sym, blocks, extra)

    def _override(self, module: str) -> tuple[int, int] | None:
        for name, bits, group in self.extra:
            if module == name or module.startswith(name + ".") or _regex_match(name, module):
                return bits, group
        return None

    def linear_bytes(
        self, weight: LinearWeight, in_features: int, out_features: int, ctx: QuantContext
    ) -> int:
        bits, group = self._override(weight.module) or (self.bits, self.group_size)
        outside = bool(self.blocks) and not any(weight.module.startswith(b + ".") for b in self.blocks)
        if stays_dense(weight) or outside or bits >= FULL_PRECISION_BITS:
            return dense_linear_bytes(weight, in_features, out_features, ctx)
        per_matrix = packed_int_bytes(
            in_features, out_features, bits=bits, group_size=group, zeros=not self.sym, act_order_indices=0
        )
        return weight.count * per_matrix + bias_bytes(weight, out_features, ctx)


def _regex_match(pattern: str, module: str) -> bool:
    try:
        return bool(re.fullmatch(pattern, module))
    except re.error:
        return False
