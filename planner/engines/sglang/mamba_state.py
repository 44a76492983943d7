"""One request's recurrent state in SGLang 0.5.23 (configs/mamba_utils.py), and how many state slots
a running request holds (mem_cache/kv_cache_configurator.py _calculate_mamba_ratio).

Per layer a slot holds the conv window, (kernel - 1) x conv channels per rank, in
SGLANG_MAMBA_CONV_DTYPE (bfloat16 by default, whatever the weights), and the SSM state,
heads per rank x its dims, in float32 unless --mamba-ssm-dtype or the config's mamba_ssm_dtype
say otherwise. Every recurrent layer has the same shape; a slot is that times the layer count.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from hkv.planner.engines.sglang.model_view import SglangModel
from hkv.planner.errors import InvalidInputError

CONV_DTYPE_BYTES = 2  # SGLANG_MAMBA_CONV_DTYPE defaults to bfloat16
DEFAULT_SSM_DTYPE = "float32"
_SSM_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# Slots a running request holds: its own state plus the radix cache's (MAMBA_CACHE_SIZE_MAX_RUNNING_
# REQUESTS_RATIO), two more for the extra buffer's ping-pong under the overlap scheduler
# (get_mamba_tracking_slots), one without the radix cache.
BASE_SLOTS_PER_REQUEST = 3
EXTRA_BUFFER_SLOTS_OVERLAP = 2
EXTRA_BUFFER_SLOTS_NO_OVERLAP = 1
NO_RADIX_SLOTS_PER_REQUEST = 1


@dataclass(frozen=True)
class MambaState:
    """One state slot on one rank: `conv_bytes` + `ssm_bytes` over `layers` recurrent layers."""

    layers: int
    conv_bytes: int  # all layers
    ssm_bytes: int  # all layers

    @property
    def slot_bytes(self) -> int:
        """SGLang's mamba_cache_per_req."""
        return self.conv_bytes + self.ssm_bytes


def ssm_dtype_bytes(model: SglangModel, mamba_ssm_dtype: str | None) -> int:
    name = mamba_ssm_dtype or model.extras.mamba_ssm_dtype or DEFAULT_SSM_DTYPE
    if name not in _SSM_DTYPE_BYTES:
        raise InvalidInputError(f"mamba_ssm_dtype must be float32, bfloat16 or float16, got {name!r}",
                                fields=("mamba_ssm_dtype",))
    return _SSM_DTYPE_BYTES[name]


def mamba_state(model: SglangModel, tp: int, mamba_ssm_dtype: str | None) -> MambaState | None:
    """The state slot of `model` at TP `tp`; None for a model without recurrent layers."""
    if not model.recurrent:
        return None
    layer = model.recurrent[0]
    conv = max(0, layer.conv_kernel_len - 1) * layer.conv_dim_per_rank(tp)
    ssm = layer.ssm_heads // tp * prod(layer.ssm_dims) if layer.ssm_dims else 0
    n = len(model.recurrent)
    return MambaState(n, conv * CONV_DTYPE_BYTES * n, ssm * ssm_dtype_bytes(model, mamba_ssm_dtype) * n)


def slots_per_request(model: SglangModel, disable_radix_cache: bool, overlap_schedule: bool = True,
                      page_size: int = 1, *, auto_extra_buffer: bool = True) -> int:
    """State slots one running request holds (the divisor of the max_running_requests cap).

    Models whose radix cache keeps states resolve the "auto" strategy to the extra buffer where
    SGLang supports it and the overlap scheduler or pages > 1 want it (overlap on: 3 + 2, off:
    3 + 1), else to no_buffer (3, and the overlap scheduler is turned off)
    (arg_groups/overrides.py _mamba_radix_cache_resolution). Before 0.5.14 "auto" was always
    no_buffer (`auto_extra_buffer` False)."""
    if disable_radix_cache:
        return NO_RADIX_SLOTS_PER_REQUEST
    if auto_extra_buffer and model.mamba_radix and model.mamba_extra_buffer and (overlap_schedule or page_size > 1):
        extra = EXTRA_BUFFER_SLOTS_OVERLAP if overlap_schedule else EXTRA_BUFFER_SLOTS_NO_OVERLAP
        return BASE_SLOTS_PER_REQUEST + extra
    return BASE_SLOTS_PER_REQUEST
