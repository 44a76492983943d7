"""Which family a config belongs to, and the values its transformers config class assumes when absent.

The defaults are the class defaults of transformers 5.23 (`<Family>Config` dataclass fields), written
out by hand so that reading a config never imports transformers. Only keys that published configs
are known to omit are listed; a missing key with no default here is an error, not a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Wrapper / vendor model_types whose language model follows another family's rules.
FAMILY_ALIASES: dict[str, str] = {
    "gemma3": "gemma3_text",
    "gemma3n": "gemma3n_text",
    "gemma4": "gemma4_text",
    "llama4": "llama4_text",
    "minimax_m1": "minimax",
    "minimax_text_01": "minimax",
    # Kimi-K2 / K2.5's language model is DeepSeek-V3's MLA + MoE decoder: its config names
    # DeepseekV3ForCausalLM, and vLLM's is_deepseek_mla lists kimi_k2 beside deepseek_v3.
    "kimi_k2": "deepseek_v3",
    # MiMo-7B: vLLM's MiMoForCausalLM is Qwen2ForCausalLM (models/mimo.py); its MTP layers
    # (num_nextn_predict_layers) are vLLM's MiMoMTP drafter.
    "mimo": "qwen2",
    # The FP8 repacks of DeepSeek-V4 (sgl-project/DeepSeek-V4-*-FP8) label DeepseekV4ForCausalLM's
    # config deepseek_ref; the keys are DeepSeek-V4's (FAMILY_NOTES says how vLLM loads it).
    "deepseek_ref": "deepseek_v4",
    # MiniMax-M3 configs that keep the language model's keys at the top level (MiniMaxM3ForCausalLM,
    # or a flat MiniMaxM3SparseForConditionalGeneration config): the text backbone's rules, which read
    # its sparse_attention_config (layer_rules.minimax_m3_layers).
    "minimax_m3": "minimax_m3_text",
    "minimax_m3_vl": "minimax_m3_vl_text",
}

# What a user must know about an aliased model_type to serve it (noted in the plan).
FAMILY_NOTES: dict[str, str] = {
    "deepseek_ref": "model_type deepseek_ref planned as deepseek_v4 (its architecture, DeepseekV4ForCausalLM); "
                    "transformers does not know deepseek_ref, so vLLM needs --hf-overrides "
                    "'{\"model_type\": \"deepseek_v4\"}' to load this config",
}


def family_of(config: Mapping[str, Any]) -> str:
    """The family key of a merged config: its text model_type, with wrapper names folded in."""
    model_type = str(config.get("model_type") or "")
    return FAMILY_ALIASES.get(model_type, model_type)


FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
              "max_position_embeddings": 2048},
    "mistral": {"tie_word_embeddings": False, "max_position_embeddings": 131072},
    "qwen3": {"attention_bias": False, "tie_word_embeddings": False, "use_sliding_window": False,
              "max_window_layers": 28, "max_position_embeddings": 32768},
    "qwen3_moe": {"attention_bias": False, "tie_word_embeddings": False, "use_sliding_window": False,
                  "max_position_embeddings": 32768, "decoder_sparse_step": 1},
    "qwen2": {"tie_word_embeddings": False, "use_sliding_window": False, "max_window_layers": 28,
              "max_position_embeddings": 32768},
    "qwen2_moe": {"qkv_bias": True, "tie_word_embeddings": False, "use_sliding_window": False,
                  "max_window_layers": 28, "max_position_embeddings": 32768, "decoder_sparse_step": 1},
    "gemma2": {"attention_bias": False, "tie_word_embeddings": True, "max_position_embeddings": 8192,
               "vocab_size": 256000},
    "gemma3_text": {"attention_bias": False, "tie_word_embeddings": True, "max_position_embeddings": 131072,
                    "vocab_size": 262208, "sliding_window": 4096, "sliding_window_pattern": 6},
    "gemma3n_text": {"attention_bias": False, "tie_word_embeddings": True, "max_position_embeddings": 32768,
                     "vocab_size": 262400, "sliding_window": 512, "num_kv_shared_layers": 15,
                     "altup_num_inputs": 4, "laurel_rank": 64, "hidden_size_per_layer_input": 256,
                     "vocab_size_per_layer_input": 262144},
    "gemma4_text": {"attention_bias": False, "tie_word_embeddings": True, "max_position_embeddings": 131072,
                    "vocab_size": 262144, "head_dim": 256, "sliding_window": 512, "num_kv_shared_layers": 0,
                    "hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262144},
    # LFM2 / LFM2-MoE (Lfm2Config, Lfm2MoeConfig): tied embeddings, bias-free conv.
    "lfm2": {"tie_word_embeddings": True, "max_position_embeddings": 128000, "conv_bias": False,
             "conv_L_cache": 3, "block_auto_adjust_ff_dim": True, "block_ffn_dim_multiplier": 1.0,
             "block_multiple_of": 256},
    "lfm2_moe": {"tie_word_embeddings": True, "max_position_embeddings": 128000, "conv_bias": False,
                 "conv_L_cache": 3, "num_dense_layers": 2},
    "lfm3": {"tie_word_embeddings": True, "max_position_embeddings": 128000, "conv_bias": False},
    "cohere2": {"attention_bias": False, "tie_word_embeddings": True, "max_position_embeddings": 8192,
                "sliding_window": 4096, "sliding_window_pattern": 4},
    "gpt_oss": {"attention_bias": True, "tie_word_embeddings": False, "max_position_embeddings": 131072},
    "llama4_text": {"attention_bias": False, "tie_word_embeddings": False, "max_position_embeddings": 131072,
                    "no_rope_layer_interval": 4, "interleave_moe_layer_step": 1,
                    "attention_chunk_size": 8192},
    "qwen3_next": {"attention_bias": False, "tie_word_embeddings": False, "max_position_embeddings": 32768,
                   "full_attention_interval": 4, "decoder_sparse_step": 1,
                   "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                   "linear_num_key_heads": 16, "linear_num_value_heads": 32},
    # Qwen3.5 / Qwen3.6 (transformers' Qwen3_5TextConfig / Qwen3_5MoeTextConfig): every layer of the
    # MoE model is sparse (no decoder_sparse_step there); the dense model has no experts.
    "qwen3_5_text": {"attention_bias": False, "max_position_embeddings": 32768, "full_attention_interval": 4,
                     "decoder_sparse_step": 1, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
                     "linear_value_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32},
    "qwen3_5_moe_text": {"attention_bias": False, "max_position_embeddings": 32768, "full_attention_interval": 4,
                         "decoder_sparse_step": 1, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
                         "linear_value_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32},
    "deepseek_v3": {"attention_bias": False, "tie_word_embeddings": False, "max_position_embeddings": 4096,
                    "first_k_dense_replace": 3, "n_shared_experts": 1},
    "deepseek_v2": {"attention_bias": False, "tie_word_embeddings": False, "max_position_embeddings": 2048,
                    "first_k_dense_replace": 0, "n_shared_experts": 2},
    "glm4_moe": {"attention_bias": False, "tie_word_embeddings": False, "max_position_embeddings": 131072,
                 "first_k_dense_replace": 1, "n_shared_experts": 1, "use_qk_norm": False},
    "minimax": {"tie_word_embeddings": False, "max_position_embeddings": 131072},
    # Flint: vLLM 0.33's FlintConfig has no decoder_sparse_step (MoE unless in mlp_only_layers),
    # transformers' defaults to 1; the same layers either way.
    "flint": {"decoder_sparse_step": 1, "attention_bias": False},
    "kimi_linear": {"attention_bias": False, "tie_word_embeddings": False, "max_position_embeddings": 1048576,
                    "first_k_dense_replace": 1, "num_shared_experts": 1,
                    "linear_head_dim": 128, "linear_num_heads": 32, "linear_conv_kernel_dim": 4},
    "bamba": {"attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
              "max_position_embeddings": 262144, "mamba_n_heads": 128, "mamba_d_head": "auto",
              "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
              "mamba_conv_bias": True, "mamba_proj_bias": False},
    "granitemoehybrid": {"attention_bias": False, "tie_word_embeddings": False,
                         "max_position_embeddings": 2048, "mamba_n_heads": 128, "mamba_d_head": "auto",
                         "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
                         "mamba_conv_bias": True, "mamba_proj_bias": False,
                         "num_local_experts": 8, "shared_intermediate_size": 1024},
    "falcon_h1": {"attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
                  "max_position_embeddings": 8192, "vocab_size": 128000, "intermediate_size": 14336,
                  "mamba_n_heads": 128, "mamba_d_head": "auto", "mamba_n_groups": 1, "mamba_d_state": 256,
                  "mamba_d_conv": 4, "mamba_expand": 2, "mamba_conv_bias": True, "mamba_proj_bias": False,
                  "mamba_rms_norm": False, "projectors_bias": False},
    "nemotron_h": {"tie_word_embeddings": False, "max_position_embeddings": 4096, "head_dim": 128,
                   "n_groups": 8, "conv_kernel": 4, "expand": 2, "use_conv_bias": True, "use_bias": False,
                   "mlp_bias": False, "mamba_ssm_cache_dtype": "float32", "n_shared_experts": 1},
    # Classic families (config_aliases.py reads their own key names): the transformers class defaults
    # of what their configs may omit.
    "gpt2": {"tie_word_embeddings": True, "max_position_embeddings": 1024},
    "gpt_bigcode": {"tie_word_embeddings": True, "multi_query": True, "max_position_embeddings": 1024},
    "gptj": {"tie_word_embeddings": False, "max_position_embeddings": 2048},
    "bloom": {"tie_word_embeddings": True},
    "falcon": {"tie_word_embeddings": True, "bias": False, "multi_query": True,
               "new_decoder_architecture": False, "parallel_attn": True, "max_position_embeddings": 2048},
    "opt": {"tie_word_embeddings": True, "enable_bias": True, "layer_norm_elementwise_affine": True,
            "do_layer_norm_before": True},
    "mpt": {"tie_word_embeddings": True, "expansion_ratio": 4},
    "starcoder2": {"tie_word_embeddings": True, "use_bias": True},
    "dbrx": {"tie_word_embeddings": False},
    "longcat_flash": {"tie_word_embeddings": False, "zero_expert_num": 256},
    "jamba": {"tie_word_embeddings": False, "max_position_embeddings": 262144,
              "attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2,
              "expert_layer_offset": 1, "num_experts": 16, "mamba_d_conv": 4, "mamba_d_state": 16,
              "mamba_expand": 2, "mamba_dt_rank": "auto", "mamba_conv_bias": True, "mamba_proj_bias": False},
}


# Bias switches: their class default is used without a note (they never change a cache size).
QUIET_DEFAULT_KEYS = frozenset({"bias", "enable_bias", "conv_bias", "attention_bias", "qkv_bias", "mlp_bias",
                                "use_bias", "use_conv_bias", "mamba_conv_bias", "mamba_proj_bias",
                                "projectors_bias", "mamba_rms_norm"})


def defaults_for(family: str) -> dict[str, Any]:
    return FAMILY_DEFAULTS.get(family, {})
