"""The page size SGLang 0.5.23 picks when --page-size is not given: the attention backend's.

On CUDA the default is 1 (arg_groups/overrides.py _page_size_default) unless the chosen attention
backend needs pages: DSA models always use 64 (model_overrides/deepseek_v2.py); on SM100 (compute
capability 10.x) the generic MHA backend is trtllm_mha (page 64, _mla_backend_page_constraints),
fa4 for unequal K/V head sizes (page 128), DeepSeek-V3's trtllm_mla (64), other MLA models
flashinfer (1), and some hybrid families' overrides pick triton or flashinfer (1). Measured against
SGLang's own resolution with the card faked as a B200 for the catalog's models.
"""

from __future__ import annotations

from hkv.planner.engines.sglang.model_view import SglangModel

DSA_PAGE_SIZE = 64  # 64 x index_kpool (1 for every DSA model hkv reads)
SM100_MAJOR = 10
TRTLLM_PAGE_SIZE = 64
FA4_PAGE_SIZE = 128
# SM100: architectures whose model override (or resolution order) leaves a page-1 backend.
SM100_PAGE_ONE_ARCHITECTURES = frozenset({
    "Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "InternS2MobiusForConditionalGeneration",  # triton
    "FalconH1ForCausalLM", "JetNemotronForCausalLM", "JetVLMForConditionalGeneration",  # triton
    "GraniteMoeHybridForCausalLM", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM",  # flashinfer
})
TRTLLM_MLA_ARCHITECTURES = frozenset({"DeepseekV3ForCausalLM"})  # model_overrides/deepseek_v2.py on SM100


def default_page_size(model: SglangModel, compute_capability: tuple[int, int]) -> int:
    if model.is_dsa:
        return DSA_PAGE_SIZE
    if compute_capability[0] != SM100_MAJOR or model.architecture in SM100_PAGE_ONE_ARCHITECTURES:
        return 1
    if model.is_mla:
        return TRTLLM_PAGE_SIZE if model.architecture in TRTLLM_MLA_ARCHITECTURES else 1
    shapes = [shape for shape in (model.full, model.swa) if shape is not None]
    if any(shape.head_dim != shape.v_head_dim for shape in shapes):
        return FA4_PAGE_SIZE
    return TRTLLM_PAGE_SIZE
