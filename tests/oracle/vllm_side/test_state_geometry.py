"""Recurrent state shapes and dtypes per TP rank: hkv's model_specs against vLLM's model classes.

For each catalog model with recurrent layers, the catalog config is turned into the
transformers config object vLLM would hold (AutoConfig.for_model; fields the catalog lacks take
transformers' defaults), and vLLM's own model class computes the per-rank state:
`get_mamba_state_shape_from_config` / `get_mamba_state_dtype_from_config`, after the family's
config hook (`MODELS_CONFIG_MAP`, e.g. NemotronH's float32 SSM default) with
mamba_cache_dtype = mamba_ssm_cache_dtype = "auto". The test asserts that hkv's StateCacheSpec
of the same rank has the same bytes, the same tensors (dims compared order-free: vLLM orients
the conv state by VLLM_SSM_CONV_STATE_LAYOUT) and the same dtypes. The same comparison runs on
the default config of every recurrent family vLLM 0.32 serves (issue 11), at TP 1 and 2.
"""

from __future__ import annotations

import functools
import json
import math

import pytest
from transformers import AutoConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
from vllm.config import VllmConfig
from vllm.model_executor.layers.mamba.mamba_utils import MambaStateShapeCalculator
from vllm.model_executor.models import ModelRegistry
from vllm.model_executor.models.config import MODELS_CONFIG_MAP

import oracle_bridge as ob
from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import StateCacheSpec

RECURRENT_MODELS = [n for n in ob.catalog_names()
                    if any(hasattr(layer, "variant") for layer in ob.load_model(n).cache_layers)]


@functools.lru_cache(maxsize=None)
def hf_config(name: str):
    raw = json.loads((ob.CATALOG_DIR / f"{name}.json").read_text())
    fields = {k: v for k, v in raw.items() if not k.startswith("_")}
    model_type = fields.pop("model_type")
    try:
        return AutoConfig.for_model(model_type, **fields)
    except Exception as err:  # unknown model_type, or a partial catalog config transformers rejects
        return f"transformers {model_type!r} config from the catalog JSON fails: {type(err).__name__}: " \
               f"{str(err).splitlines()[0][:160]}"


def architecture(name: str, hf) -> str | None:
    m = ob.load_model(name)
    archs = tuple(m.architectures or ()) or tuple(getattr(hf, "architectures", None) or ())
    if archs:
        return archs[0]
    return MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(m.model_type)


def vllm_state(name: str, tp: int):
    m = ob.load_model(name)
    reason = ob.vllm_rejects(m)
    if reason:
        pytest.skip(reason)
    hf = hf_config(name)
    if isinstance(hf, str):
        pytest.skip(hf)
    arch = architecture(name, hf)
    model_cls = ModelRegistry._try_load_model_cls(arch) if arch else None
    if model_cls is None:
        pytest.skip(f"no vLLM model class for {arch}")
    vc = VllmConfig()
    stub = ob.StubModelConfig(architecture=arch, dtype=ob.TORCH_DTYPE[m.dtype_bytes], max_model_len=4096,
                              use_mla=False, num_kv_heads=1, head_size=1, is_hybrid=True)
    stub.hf_config = stub.hf_text_config = hf
    vc.model_config = stub  # type: ignore[assignment]
    vc.parallel_config.tensor_parallel_size = tp
    vc.cache_config.mamba_cache_dtype = "auto"
    vc.cache_config.mamba_ssm_cache_dtype = "auto"  # the CPU platform hook forced float32
    hook = MODELS_CONFIG_MAP.get(arch)
    if hook is not None:
        hook.verify_and_update_config(vc)
    try:
        shapes = model_cls.get_mamba_state_shape_from_config(vc)
    except AssertionError as err:  # vllm.distributed.utils.divide: TP must divide the heads
        pytest.skip(f"vLLM refuses TP {tp}: {err}")
    dtypes = model_cls.get_mamba_state_dtype_from_config(vc)
    return m, hf, shapes, dtypes


def hkv_state(m, tp: int) -> StateCacheSpec:
    opts = CacheOptions(tp=tp, kv_dtype_bytes=m.dtype_bytes)
    return next(s for _, s in m.cache_specs(opts) if isinstance(s, StateCacheSpec))


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
@pytest.mark.parametrize("name", RECURRENT_MODELS)
def test_state_shapes_and_dtypes(name: str, tp: int) -> None:
    m, hf, shapes, dtypes = vllm_state(name, tp)
    ours = hkv_state(m, tp)
    vllm_bytes = sum(math.prod(s) * d.itemsize for s, d in zip(shapes, dtypes))
    theirs = [tuple(sorted(s)) for s in shapes]
    mine = [tuple(sorted(s)) for s in ours.shapes]
    assert mine == theirs, f"hkv {ours.shapes} vs vLLM {shapes}"
    assert list(ours.dtype_bytes) == [d.itemsize for d in dtypes], f"hkv {ours.dtype_bytes} vs vLLM {dtypes}"
    assert ours.state_bytes == vllm_bytes


# transformers' default config of each recurrent family vLLM 0.32 serves (with the keys its vLLM
# model class reads but the default lacks), and the vLLM architecture that serves it.
FAMILY_DEFAULTS = {
    "zamba2": ({}, "Zamba2ForCausalLM"),
    "lfm2": ({"layer_types": ["conv", "full_attention"] * 16, "conv_dim": 2560}, "Lfm2ForCausalLM"),
    "lfm2_moe": ({"layer_types": ["conv", "full_attention"] * 16}, "Lfm2MoeForCausalLM"),
    "mamba2": ({}, "Mamba2ForCausalLM"),
    "mamba": ({}, "MambaForCausalLM"),
    "falcon_mamba": ({}, "FalconMambaForCausalLM"),
    "olmo_hybrid": ({}, "OlmoHybridForCausalLM"),
    "qwen4_exp_text": ({}, "Qwen4ExpForCausalLM"),  # GDN; its config hook reads Qwen3.5's mamba_ssm_dtype
}
# Classes this CPU venv cannot import (their modules need torchvision), and the vLLM class whose state
# methods have the same body: vllm/models/qwen4_exp/nvidia/model.py's get_gdn_mamba_state_shape_ /
# _dtype_from_config are line for line Qwen3NextForCausalLM's (hf_text_config.linear_* into
# gated_delta_net_state_shape; gated_delta_net_state_dtype). The config hook stays the family's own
# (MODELS_CONFIG_MAP[arch]: Qwen4Exp's, which applies Qwen3.5's mamba_ssm_dtype rule).
STATE_CLASS_STAND_IN = {"Qwen4ExpForCausalLM": "Qwen3NextForCausalLM"}
# transformers 5.23's BailingHybridConfig defaults (this venv's transformers predates the class),
# the keys both readers need; vLLM serves it as BailingMoeV3 (KDA + MLA).
BAILING_HYBRID = {
    "model_type": "bailing_hybrid", "hidden_size": 2560, "intermediate_size": 6144, "num_hidden_layers": 12,
    "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 64, "vocab_size": 157184,
    "model_max_length": 262144, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "short_conv_kernel_size": 4,
    "linear_num_heads": 32, "linear_head_dim": 128, "no_kda_lora": True,
    "layer_types": (["linear_attention"] * 5 + ["full_attention"]) * 2,
}


def _family_config(family: str):
    if family == "bailing_hybrid":
        from transformers import PretrainedConfig
        return PretrainedConfig(**BAILING_HYBRID), BAILING_HYBRID, "BailingMoeV3ForCausalLM"
    overrides, arch = FAMILY_DEFAULTS[family]
    hf = AutoConfig.for_model(family, **overrides)
    return hf, hf.to_dict(), arch


def vllm_family_state(hf, arch: str, dtype_bytes: int, tp: int):
    model_cls = ModelRegistry._try_load_model_cls(STATE_CLASS_STAND_IN.get(arch, arch))
    assert model_cls is not None, f"vLLM 0.32 has no {arch}"
    vc = VllmConfig()
    stub = ob.StubModelConfig(architecture=arch, dtype=ob.TORCH_DTYPE[dtype_bytes], max_model_len=4096,
                              use_mla=False, num_kv_heads=1, head_size=1, is_hybrid=True)
    stub.hf_config = stub.hf_text_config = hf
    stub.multimodal_config = None  # a text-only serve: read by Qwen4Exp's config hook
    vc.model_config = stub  # type: ignore[assignment]
    vc.parallel_config.tensor_parallel_size = tp
    vc.cache_config.mamba_cache_dtype = "auto"
    vc.cache_config.mamba_ssm_cache_dtype = "auto"
    hook = MODELS_CONFIG_MAP.get(arch)
    if hook is not None:
        hook.verify_and_update_config(vc)
    try:
        shapes = model_cls.get_mamba_state_shape_from_config(vc)
    except AssertionError as err:
        pytest.skip(f"vLLM refuses TP {tp}: {err}")
    return shapes, model_cls.get_mamba_state_dtype_from_config(vc)


@pytest.mark.parametrize("tp", [1, 2])
@pytest.mark.parametrize("family", sorted(FAMILY_DEFAULTS) + ["bailing_hybrid"])
def test_family_default_state_equals_vllm(family: str, tp: int) -> None:
    from hkv.model_specs.from_hf_config import from_hf_config

    hf, raw, arch = _family_config(family)
    m = from_hf_config(raw, family)
    shapes, dtypes = vllm_family_state(hf, arch, m.dtype_bytes, tp)
    ours = hkv_state(m, tp)
    assert [tuple(sorted(x)) for x in ours.shapes] == [tuple(sorted(x)) for x in shapes], \
        f"hkv {ours.shapes} vs vLLM {shapes}"
    assert list(ours.dtype_bytes) == [d.itemsize for d in dtypes]
    assert ours.state_bytes == sum(math.prod(x) * d.itemsize for x, d in zip(shapes, dtypes))
