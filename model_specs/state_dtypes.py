"""Default element sizes of recurrent states, following vLLM's MambaStateDtypeCalculator.

- conv state: the model dtype (vLLM `mamba_cache_dtype="auto"`).
- ssm / recurrent state: `mamba_ssm_cache_dtype` when the config sets it, else the conv dtype.
  Nemotron-H: vLLM's NemotronHForCausalLMConfig reads that key with a float32 default, which our
  family default for the key reproduces.
- Kimi delta attention: vLLM's `kda_state_dtype` always keeps the recurrent state in float32.
- Qwen3.5 / Qwen3.6 / Qwen4-Exp: vLLM's Qwen3_5ForConditionalGenerationConfig takes the SSM dtype from the
  text config's own `mamba_ssm_dtype` (float32 in the published configs) when the cache dtype is
  auto.
- MiniMax lightning attention: one state, in the model dtype (`linear_attention_state_dtype`
  ignores mamba_ssm_cache_dtype; older vLLM refused float32 for it outright).
"""

from __future__ import annotations

from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.dtypes import dtype_bytes

FP32_BYTES = 4
# The config key that names the SSM state dtype, where a family's vLLM config reads another one.
SSM_DTYPE_KEY = {"qwen3_5_text": "mamba_ssm_dtype", "qwen3_5_moe_text": "mamba_ssm_dtype",
                 "qwen4_exp_text": "mamba_ssm_dtype"}  # Qwen4ExpForCausalLMConfig extends Qwen3.5's hook


def default_state_dtype_bytes(view: ConfigView, variant: str, model_dtype_bytes: int) -> tuple[int, int]:
    """(conv bytes, ssm bytes) per element for a recurrent layer of `variant`."""
    conv = model_dtype_bytes
    if variant == "kda":
        return conv, FP32_BYTES
    if variant == "lightning":
        return conv, conv
    key = SSM_DTYPE_KEY.get(view.family, "mamba_ssm_cache_dtype")
    ssm_name = view.value(key, None)
    if not ssm_name or ssm_name == "auto":
        return conv, conv
    return conv, dtype_bytes(ssm_name, attribute=key)
