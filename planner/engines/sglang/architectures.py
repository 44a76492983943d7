"""Architecture tables SGLang 0.5.23 sizes by (read from its configs/ and arg_groups/ modules)."""

from __future__ import annotations

# configs/model_config.py is_hybrid_swa_model: a full pool and a sliding pool split by
# swa_full_tokens_ratio (Llama 4's chunked layers count as sliding). BeamForCausalLM only with
# sliding layers; LagunaForCausalLM only with a sliding window (checked in model_view.py).
HYBRID_SWA_ARCHITECTURES = frozenset({
    "BeamForCausalLM", "Llama4ForConditionalGeneration", "GptOssForCausalLM", "GraniteSWAForCausalLM",
    "GraniteMoeSWAForCausalLM", "IQuestQ1ForCausalLM", "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM",
    "Step3p5ForCausalLM", "Step3p7ForConditionalGeneration", "Gemma4ForCausalLM",
    "Gemma4ForConditionalGeneration", "EmbeddingGemma2Model", "Gemma4UnifiedForConditionalGeneration",
    "DiffusionGemmaForBlockDiffusion", "LagunaForCausalLM", "MellumForCausalLM", "MuseGlimmerForCausalLM",
    "MuseGlimmerForConditionalGeneration", "UnlimitedOCRForCausalLM",
})
# arg_groups/model_overrides/gemma2_gemma3.py: disable_hybrid_swa_memory, one full-length pool.
FORCED_ONE_POOL_ARCHITECTURES = frozenset({
    "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3nForCausalLM",
    "Gemma3nForConditionalGeneration",
})
# configs/model_config.py _derive_model_shapes: the architectures SGLang serves with its MLA backend
# (one latent of kv_lora_rank + qk_rope_head_dim per token and layer, on every TP rank).
MLA_ARCHITECTURES = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "Glm4MoeLiteForCausalLM",
    "GlmMoeDsaForCausalLM", "Glm5NextForConditionalGeneration", "LongcatFlashForCausalLM", "HYV4ForCausalLM",
    "DotsVLMForCausalLM", "Dots3NoteForCausalLM", "MistralLarge3ForCausalLM", "KimiK25ForConditionalGeneration",
    "GigaChat35ForCausalLM", "MiniCPM3ForCausalLM", "DeepseekVL2ForCausalLM", "KimiVLForConditionalGeneration",
    "KimiLinearForCausalLM", "KimiK3LinearForCausalLM", "KimiK3ForConditionalGeneration",
    "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM", "SarvamMLAForCausalLM",
})
# configs/model_config.py multimodal_model_archs: SGLang lowers mem_fraction_static for them and
# reserves SGLANG_VLM_CACHE_SIZE_MB out of the KV budget.
MULTIMODAL_ARCHITECTURES = frozenset({
    "BailingMM2NativeForConditionalGeneration", "BailingMMNativeForConditionalGeneration",
    "BailingMoeV3VLForConditionalGeneration", "CLIPModel", "Cohere2VisionForConditionalGeneration",
    "Cosmos3EdgeForConditionalGeneration", "DeepseekOCRForCausalLM", "DeepseekVL2ForCausalLM",
    "DiffusionGemmaForBlockDiffusion", "Dots3NoteForCausalLM", "DotsOCRForCausalLM", "DotsVLMForCausalLM",
    "EmbeddingGemma2Model", "Ernie4_5_VLMoeForConditionalGeneration", "Gemma3ForConditionalGeneration",
    "Gemma3nForConditionalGeneration", "Gemma4ForConditionalGeneration",
    "Gemma4UnifiedForConditionalGeneration", "Glm4vForConditionalGeneration",
    "Glm4vMoeForConditionalGeneration", "Glm5NextForConditionalGeneration",
    "GlmAsrForConditionalGeneration", "GlmImageForConditionalGeneration", "GlmOcrForConditionalGeneration",
    "Grok1AForCausalLM", "Grok1VForCausalLM", "InternS1ForConditionalGeneration",
    "InternS1ProForConditionalGeneration", "InternS2MobiusForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "InternVLChatModel", "JetVLMForConditionalGeneration",
    "KimiK25ForConditionalGeneration", "KimiVLForConditionalGeneration", "Lfm2VlForConditionalGeneration",
    "LightOnOCRForConditionalGeneration", "Llama4ForConditionalGeneration", "LlavaForConditionalGeneration",
    "LlavaLlamaForCausalLM", "LlavaMistralForCausalLM", "LlavaQwenForCausalLM", "LlavaVidForCausalLM",
    "LocateAnythingForConditionalGeneration", "MiDashengLMModel", "MiMoV2ASRForCausalLM",
    "MiMoV2ForCausalLM", "MiniCPMO", "MiniCPMV", "MiniMaxM3SparseForConditionalGeneration",
    "Mistral3ForConditionalGeneration", "MllamaForConditionalGeneration", "MossVLForConditionalGeneration",
    "MultiModalityCausalLM", "MuseGlimmerForConditionalGeneration", "MuseSparkForConditionalGeneration",
    "NVILAForConditionalGeneration", "NVILALiteForConditionalGeneration",
    "NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Nano_VL_V2", "NemotronH_Omni_Reasoning_V3",
    "POINTSV15ChatModel", "PaddleOCRVLForConditionalGeneration", "Phi4MMForCausalLM",
    "PixtralForConditionalGeneration", "Qwen2AudioForConditionalGeneration",
    "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
    "Qwen3ASRForConditionalGeneration", "Qwen3OmniMoeForConditionalGeneration",
    "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen4ExpForConditionalGeneration", "Sarashina2VisionForCausalLM", "Step3VLForConditionalGeneration",
    "Step3p7ForConditionalGeneration", "StepVLForConditionalGeneration", "UnlimitedOCRForCausalLM",
    "VoxtralForConditionalGeneration", "WhisperForConditionalGeneration",
})
# configs/model_config.py: multimodal off unless --enable-multimodal (served as language models: no
# mem_fraction_static cut, no multimodal reservation, the prefill graph kept).
MULTIMODAL_OFF_BY_DEFAULT = frozenset({
    "Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration", "Step3VLForConditionalGeneration",
    "InklingForConditionalGeneration",
})
# The vision tower SGLang's mem_fraction_static cut sees where config.json has no vision_config:
# transformers builds its default sub-config ((num_hidden_layers, hidden_size); Qwen3.5's tower
# says `depth`, so SGLang's getattr falls back to 24 layers even with a vision_config).
DEFAULT_VISION_TOWER: dict[str, tuple[int, int]] = {
    "Qwen3_5ForConditionalGeneration": (24, 1152),
    "Qwen3_5MoeForConditionalGeneration": (24, 1152),
    # Gemma3nVisionConfig (timm MobileNet-v5): hidden_size 2048 and no num_hidden_layers (SGLang reads 24).
    "Gemma3nForConditionalGeneration": (24, 2048),
}
# Multimodal architectures that keep the breakable prefill CUDA graph (and its reserve); the
# others lose it (arg_groups/cuda_graph_hook.py disable_breakable_cudagraph_if_incompatible).
MULTIMODAL_PREFILL_GRAPH_ARCHITECTURES = frozenset({
    "MiniMaxM3SparseForConditionalGeneration", "Cohere2VisionForConditionalGeneration",
    "Glm5NextForConditionalGeneration", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen4ExpForConditionalGeneration", "MuseGlimmerForConditionalGeneration", "MuseSparkForConditionalGeneration",
    "KimiK3ForConditionalGeneration", "KimiK25ForConditionalGeneration",
})
# arg_groups/overrides.py _MAMBA_RADIX_CACHE_ARCHS and _MAMBA_EXTRA_BUFFER_ARCHS: the hybrid
# recurrent models whose radix cache keeps states, and those whose "auto" strategy is the extra
# buffer (two more state slots per running request with the overlap scheduler).
MAMBA_RADIX_ARCHITECTURES = frozenset({
    "KimiLinearForCausalLM", "KimiK3ForConditionalGeneration", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM",
    "BailingMoeV3VLForConditionalGeneration", "Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "InternS2MobiusForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM",
    "Qwen4ExpForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration",
    "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronH_Omni_Reasoning_V3", "FalconH1ForCausalLM",
    "JetNemotronForCausalLM", "JetVLMForConditionalGeneration", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM",
    "ZayaForCausalLM", "Glm5NextForConditionalGeneration",
    "GraniteMoeHybridForCausalLM",  # when its layer_types name a mamba layer
})
MAMBA_EXTRA_BUFFER_ARCHITECTURES = frozenset({
    "KimiLinearForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM", "Qwen3NextForCausalLM", "Qwen4ExpForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration",
    "MiniCPMV4_7ForConditionalGeneration", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM",
    "BailingMoeV3VLForConditionalGeneration", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM",
    "Glm5NextForConditionalGeneration", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    "NemotronH_Omni_Reasoning_V3", "KimiK3ForConditionalGeneration", "InklingForConditionalGeneration",
    "InklingForConditionalGenerationMTP",
})
# KDA hybrids lose the breakable prefill CUDA graph (cuda_graph_hook.py), GLM-5.3 Flash excepted.
KDA_ARCHITECTURES = frozenset({"KimiLinearForCausalLM", "KimiK3ForConditionalGeneration"})
# Served, but sized by pool configurators hkv does not reproduce; the reason is the refusal line.
UNSIZED_ARCHITECTURES: dict[str, str] = {}
# DSV4PoolConfigurator (compressed c4/c128 pools and their states): sized by dsv4_pools.py.
DSV4_ARCHITECTURES = frozenset({"DeepseekV4ForCausalLM"})
# MiniMaxSparseKVPool: K/V for every layer plus the sparse layers' index keys, in the model's dtype.
SPARSE_INDEXER_ARCHITECTURES = frozenset({"MiniMaxM3SparseForConditionalGeneration", "MiniMaxM3SparseForCausalLM"})
# Model classes whose get_attention_sliding_window_size is the config's window - 1 (what SGLang's
# runner takes as sliding_window_size for the SWA pool's admission floor and request cap).
WINDOW_MINUS_ONE_ARCHITECTURES = frozenset({
    "GptOssForCausalLM", "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
    "BeamForCausalLM", "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration",
})
# A config without `architectures`: the class SGLang's registry would pick for its family.
FAMILY_ARCHITECTURE: dict[str, str] = {
    "granitemoehybrid": "GraniteMoeHybridForCausalLM",
    "gemma3n_text": "Gemma3nForCausalLM",
    "gemma3n": "Gemma3nForConditionalGeneration",
}
