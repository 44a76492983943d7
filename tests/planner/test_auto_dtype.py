"""--dtype auto on a float32 checkpoint resolves as vLLM 0.32 / 0.33's `_resolve_auto_dtype` does on
the plan's platform: the first of the platform's supported_dtypes.

- h100 (compute capability 9.0): bfloat16, 2 bytes;
- t4 (7.5; Turing has no bfloat16): float16, 2 bytes;
- the CPU engine (x86 / aarch64: [bfloat16, float16, float32]): bfloat16, 2 bytes. Checked against
  vLLM 0.32's own function on this machine's CPU platform:
  `_resolve_auto_dtype("llama", torch.float32, is_pooling_model=False)` -> torch.bfloat16;
- no GPU named (a bare memory size): the platform is unknown, the config's float32 stands.

Figures by hand for a Llama-shaped float32 config: 32 layers, hidden 4096, 32 query / 8 KV heads of
128, MLP 14336, vocab 32000, untied.
  KV per token = 2 (K and V) x 32 layers x 8 heads x 128 x dtype = 65,536 x dtype bytes
  params: embed + lm_head 2 x 32000 x 4096 = 262,144,000; per layer q 16,777,216 + k,v 8,388,608
  + o 16,777,216 + MLP 3 x 4096 x 14336 = 176,160,768 + two norms 8,192 = 218,112,000, x 32 =
  6,979,584,000; final norm 4,096: 7,241,732,096 parameters; plus the rotary cos/sin cache vLLM
  allocates in the model dtype, 8192 positions x 128 = 1,048,576 elements.
"""

from __future__ import annotations

import pytest
from hkv.model_specs.cache_spec import AttentionCacheSpec
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.auto_dtype import auto_downcast_dtype
from hkv.planner.budget.weights import weights_term
from hkv.planner.plan_config import PlanConfig

FLOAT32_LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "float32",
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
}
NUM_PARAMS = 7_241_732_096
KV_PER_TOKEN_PER_DTYPE_BYTE = 65_536
ROTARY_ELEMENTS = 8192 * 128

PLATFORMS = [  # (config, resolved dtype name, bytes per element)
    (PlanConfig(gpu="h100"), "bfloat16", 2),
    (PlanConfig(gpu="t4"), "float16", 2),
    (PlanConfig(gpu=None, cpu_engine=True), "bfloat16", 2),
    (PlanConfig(gpu=None, gpu_memory_bytes=80 << 30), None, 4),
]


@pytest.fixture(scope="module")
def model():
    spec = from_hf_config(FLOAT32_LLAMA, "float32-llama")
    assert (spec.dtype_bytes, spec.num_params) == (4, NUM_PARAMS)
    return spec


@pytest.mark.parametrize("cfg, name, element_bytes", PLATFORMS)
def test_auto_resolves_per_platform(model, cfg, name, element_bytes) -> None:
    assert auto_downcast_dtype(cfg.gpu, cfg.cpu_engine) == name
    specs = [s for _, s in model.cache_specs(cfg.cache_options(model.dtype_bytes))]
    assert all(isinstance(s, AttentionCacheSpec) for s in specs) and len(specs) == 32
    # h100 / t4 / CPU: 131,072 B per token; unknown platform: 262,144 B
    assert sum(s.bytes_per_token for s in specs) == KV_PER_TOKEN_PER_DTYPE_BYTE * element_bytes
    # h100 / t4 / CPU: 14,485,561,344 B of weights; unknown platform: 28,971,122,688 B
    assert weights_term(model, cfg).bytes == (NUM_PARAMS + ROTARY_ELEMENTS) * element_bytes


def test_hand_figures() -> None:
    assert KV_PER_TOKEN_PER_DTYPE_BYTE * 2 == 131_072
    assert (NUM_PARAMS + ROTARY_ELEMENTS) * 2 == 14_485_561_344


def test_explicit_dtype_wins_and_16_bit_configs_stay(model) -> None:
    assert PlanConfig(gpu="h100", dtype="float32").weight_dtype_bytes(4) == 4
    assert PlanConfig(gpu="h100", dtype="float32").cache_options(4).kv_dtype_bytes == 4
    assert PlanConfig(gpu="t4").weight_dtype_bytes(2) == 2  # bfloat16 config -> float16 on Turing
    assert PlanConfig(gpu=None, cpu_engine=True).weight_dtype_bytes(2) == 2


def test_conv_states_follow_the_cast() -> None:
    """vLLM's conv state takes the model dtype (mamba_cache_dtype auto), so auto's cast reaches it;
    where auto keeps the config's dtype the family default (None) stands."""
    assert PlanConfig(gpu="h100").cache_options(4).conv_dtype_bytes == 2
    assert PlanConfig(gpu=None).cache_options(4).conv_dtype_bytes is None
    assert PlanConfig(gpu="h100").cache_options(2).conv_dtype_bytes is None
