"""The KV cache spec of one of vLLM's own attention modules, built on CPU for a transformers config.

Tests that compare hkv's page with the module a vLLM 0.32 decoder layer constructs call
`module_kv_spec` under the `tp1_group` fixture (conftest.py): the parallel linear layers read the
TP rank and size. The stub ModelConfig carries only what the attention layers read.
"""

from __future__ import annotations

from collections.abc import Callable

import oracle_bridge as ob
import torch
from vllm.config import VllmConfig, set_current_vllm_config
from vllm.transformers_utils.model_arch_config_convertor import ModelArchConfigConvertorBase

# (vllm_config, hf config, module prefix, use_mla) -> the attention module
ModuleBuilder = Callable[[VllmConfig, object, str, bool], torch.nn.Module]


def module_kv_spec(build: ModuleBuilder, hf, architecture: str, prefix: str, *, block_size: int):
    """The single KV cache spec of the module `build` constructs (MLA when vLLM's convertor lists the
    config's model_type, as ModelConfig.use_mla would)."""
    use_mla = ModelArchConfigConvertorBase(hf, hf).is_deepseek_mla()
    vc = VllmConfig()
    stub = ob.StubModelConfig(architecture=architecture, dtype=torch.bfloat16, max_model_len=4096,
                              use_mla=use_mla, num_kv_heads=1, head_size=1, is_hybrid=False)
    stub.hf_config = stub.hf_text_config = hf
    stub.is_mm_prefix_lm = False  # ModelConfig members the attention layers read
    stub.multimodal_config = stub.rswa_window = None
    vc.model_config = stub  # type: ignore[assignment]
    vc.cache_config.block_size = block_size
    with set_current_vllm_config(vc):
        module = build(vc, hf, prefix, use_mla)
        specs = [m.get_kv_cache_spec(vc) for m in module.modules()
                 if hasattr(m, "get_kv_cache_spec") and m is not module]
    assert len(specs) == 1, specs
    return specs[0]
