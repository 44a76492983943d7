"""hkv's analytic parameter count equals transformers' own count on tiny random models.

For each family a tiny config (hidden 64, 2-4 layers, vocab 256) is built with transformers, its
`to_dict()` goes through `from_hf_config`, and `ModelSpec.num_params` must equal
`sum(p.numel() for p in model.parameters())` exactly (tied weights counted once).

Status: exact for every family listed in FAMILIES below, Gemma 3n's text model and DeepSeek-V3
included. Not covered: vision/audio towers of multimodal checkpoints (hkv counts the language
model only), and multi-token-prediction layers (transformers does not build them either).
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hkv.model_specs.from_hf_config import from_hf_config  # noqa: E402

TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=256,
            intermediate_size=96, max_position_embeddings=512, pad_token_id=0, bos_token_id=1, eos_token_id=2)

# family -> overrides on TINY; several variants per family exercise biases, tying and MoE placement.
FAMILIES: dict[str, dict] = {
    "llama": dict(num_hidden_layers=2),
    "llama-bias-tied": dict(model_type="llama", num_hidden_layers=2, attention_bias=True, mlp_bias=True,
                            tie_word_embeddings=True),
    "qwen3": dict(num_hidden_layers=2),
    "mistral": dict(num_hidden_layers=2, sliding_window=64),
    "qwen2": dict(num_hidden_layers=2),
    "qwen3_moe": dict(num_hidden_layers=3, num_experts=4, moe_intermediate_size=32, num_experts_per_tok=2,
                      mlp_only_layers=[0]),
    "qwen2_moe": dict(num_hidden_layers=2, num_experts=4, moe_intermediate_size=32, num_experts_per_tok=2,
                      shared_expert_intermediate_size=48, decoder_sparse_step=2),
    "deepseek_v2": dict(num_hidden_layers=3, n_routed_experts=4, moe_intermediate_size=32, kv_lora_rank=16,
                        q_lora_rank=None, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                        first_k_dense_replace=1, n_group=1, topk_group=1, num_experts_per_tok=2),
    "gemma2": dict(num_hidden_layers=3, sliding_window=32),
    "gemma3_text": dict(num_hidden_layers=3, sliding_window=32, tie_word_embeddings=False),
    "cohere2": dict(num_hidden_layers=4, head_dim=None),
    "gpt_oss": dict(num_hidden_layers=2, num_local_experts=4, sliding_window=32),
    "llama4_text": dict(num_hidden_layers=4, num_local_experts=4, intermediate_size_mlp=80,
                        interleave_moe_layer_step=2, attention_chunk_size=32),
    "qwen3_next": dict(num_hidden_layers=4, num_experts=4, moe_intermediate_size=32,
                       shared_expert_intermediate_size=48, linear_num_key_heads=2, linear_num_value_heads=4,
                       linear_key_head_dim=16, linear_value_head_dim=8, mlp_only_layers=[1]),
    "qwen3_5_text": dict(num_hidden_layers=4, linear_num_key_heads=2, linear_num_value_heads=4,
                         linear_key_head_dim=16, linear_value_head_dim=8),
    "qwen3_5_moe_text": dict(num_hidden_layers=4, num_experts=4, moe_intermediate_size=32,
                             shared_expert_intermediate_size=48, linear_num_key_heads=2,
                             linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8),
    "glm4_moe_lite": dict(num_hidden_layers=3, n_routed_experts=4, moe_intermediate_size=32, kv_lora_rank=16,
                          q_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                          first_k_dense_replace=1, n_group=1, topk_group=1, num_experts_per_tok=2),
    "glm4_moe_lite-mlp_layer_types": dict(model_type="glm4_moe_lite", num_hidden_layers=3, n_routed_experts=4,
                                          moe_intermediate_size=32, kv_lora_rank=16, q_lora_rank=24,
                                          qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                                          mlp_layer_types=["dense", "sparse", "dense"], n_group=1, topk_group=1,
                                          num_experts_per_tok=2),
    "mamba2": dict(num_hidden_layers=2, num_heads=8, head_dim=16, state_size=16, n_groups=2),
    "mamba": dict(num_hidden_layers=2, state_size=8),
    "falcon_mamba": dict(num_hidden_layers=2, state_size=8, use_bias=True),
    "deepseek_v3": dict(num_hidden_layers=3, n_routed_experts=4, moe_intermediate_size=32, kv_lora_rank=16,
                        q_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                        first_k_dense_replace=1, n_group=1, topk_group=1, num_experts_per_tok=2),
    "glm4_moe": dict(num_hidden_layers=3, n_routed_experts=4, moe_intermediate_size=32,
                     first_k_dense_replace=1, num_experts_per_tok=2, attention_bias=True, use_qk_norm=True),
    "minimax": dict(num_hidden_layers=4, num_local_experts=4),
    "kimi_linear": dict(num_hidden_layers=3, num_experts=4, moe_intermediate_size=32, kv_lora_rank=16,
                        qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, num_experts_per_token=2,
                        linear_attn_config={"full_attn_layers": [2], "kda_layers": [1, 3], "head_dim": 16,
                                            "num_heads": 4, "short_conv_kernel_size": 4}),
    "bamba": dict(num_hidden_layers=3, attn_layer_indices=[1], mamba_n_heads=8, mamba_d_head=16,
                  mamba_d_state=16, mamba_n_groups=2),
    "granitemoehybrid": dict(num_hidden_layers=3, layer_types=["mamba", "attention", "mamba"],
                             mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16, num_local_experts=4,
                             shared_intermediate_size=48),
    "granite-dense": dict(model_type="granitemoehybrid", num_hidden_layers=2,
                          layer_types=["mamba", "attention"], mamba_n_heads=8, mamba_d_state=16,
                          num_local_experts=0, shared_intermediate_size=48, tie_word_embeddings=True),
    "nemotron_h": dict(hybrid_override_pattern="M*-E", mamba_num_heads=8, mamba_head_dim=16,
                       ssm_state_size=16, n_groups=2, n_routed_experts=4, moe_intermediate_size=32,
                       moe_shared_expert_intermediate_size=48),
    "jamba": dict(num_hidden_layers=4, attn_layer_period=2, attn_layer_offset=1, num_experts=4,
                  mamba_d_state=8, mamba_dt_rank=8),
    "falcon_h1": dict(num_hidden_layers=2, mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16,
                      mamba_n_groups=2, mamba_d_ssm=128),
    "falcon_h1-norm-bias": dict(model_type="falcon_h1", num_hidden_layers=2, mamba_n_heads=8, mamba_d_head=16,
                                mamba_d_state=16, mamba_d_ssm=128, mamba_rms_norm=True, projectors_bias=True,
                                mamba_proj_bias=True, attention_bias=True),
    "gemma4_text": dict(num_hidden_layers=6, sliding_window=32, global_head_dim=32, hidden_size_per_layer_input=0),
    "gemma4-k_eq_v-ple-shared": dict(model_type="gemma4_text", num_hidden_layers=6, sliding_window=32,
                                     global_head_dim=32, num_global_key_value_heads=1, attention_k_eq_v=True,
                                     hidden_size_per_layer_input=8, vocab_size_per_layer_input=128,
                                     num_kv_shared_layers=2, use_double_wide_mlp=True,
                                     layer_types=["sliding_attention", "full_attention"] * 3),
    "gemma4-moe": dict(model_type="gemma4_text", num_hidden_layers=3, sliding_window=32, global_head_dim=32,
                       hidden_size_per_layer_input=0, enable_moe_block=True, num_experts=4, top_k_experts=2,
                       moe_intermediate_size=24, tie_word_embeddings=False),
    "lfm2": dict(num_hidden_layers=4, layer_types=["conv", "full_attention", "conv", "conv"],
                 block_multiple_of=32),
    "lfm2-bias-plain-ffn": dict(model_type="lfm2", num_hidden_layers=2, layer_types=["conv", "full_attention"],
                                conv_bias=True, block_auto_adjust_ff_dim=False, tie_word_embeddings=False),
    "lfm2_moe": dict(num_hidden_layers=4, layer_types=["conv", "full_attention", "conv", "full_attention"],
                     num_dense_layers=1, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32),
    "gemma3n_text": dict(num_hidden_layers=4, num_kv_shared_layers=2, vocab_size_per_layer_input=128,
                         hidden_size_per_layer_input=8, laurel_rank=4, sliding_window=32,
                         layer_types=["sliding_attention", "full_attention"] * 2,
                         activation_sparsity_pattern=[0.0] * 4),
    # Inkling: local layers (swa_* geometry, relative-logits bank of the window) and a global one; MoE
    # with routed + shared experts everywhere but the dense first layer.
    "inkling_text": dict(num_hidden_layers=3, swa_num_attention_heads=2, swa_num_key_value_heads=1,
                         swa_head_dim=8, sliding_window_size=32, rel_extent=48, d_rel=4,
                         layer_types=["hybrid_sliding", "hybrid", "hybrid_sliding"],
                         mlp_layer_types=["dense", "sparse", "sparse"], n_routed_experts=4, n_shared_experts=2,
                         num_experts_per_tok=2, moe_intermediate_size=32, conv_kernel_size=3),
    "inkling_text-default-types": dict(model_type="inkling_text", num_hidden_layers=6, n_routed_experts=4,
                                       n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=24,
                                       swa_num_attention_heads=4, swa_num_key_value_heads=2, swa_head_dim=16,
                                       sliding_window_size=16, rel_extent=32),
    # Classic families with their own key names (TINY's standard names reach them through each class's
    # attribute_map; the strays they do not use, e.g. GPT-2's num_key_value_heads, must be ignored).
    "gpt2": dict(num_hidden_layers=2),
    "gpt2-inner-untied": dict(model_type="gpt2", num_hidden_layers=2, n_inner=80, tie_word_embeddings=False),
    "gpt_bigcode": dict(num_hidden_layers=2),  # multi_query: one KV head
    "gpt_bigcode-mha": dict(model_type="gpt_bigcode", num_hidden_layers=2, multi_query=False),
    "gptj": dict(num_hidden_layers=2, rotary_dim=8),
    "gptj-tied": dict(model_type="gptj", num_hidden_layers=2, rotary_dim=8, tie_word_embeddings=True),
    "bloom": dict(num_hidden_layers=2),
    # FalconConfig.head_dim is a read-only property: TINY's head_dim cannot be passed.
    "falcon": dict(num_hidden_layers=2, head_dim=None),  # falcon-7b: multi_query, parallel, one LayerNorm
    "falcon-new-arch": dict(model_type="falcon", num_hidden_layers=2, head_dim=None,
                            new_decoder_architecture=True, num_kv_heads=2, bias=True, ffn_hidden_size=80),
    "falcon-sequential": dict(model_type="falcon", num_hidden_layers=2, head_dim=None, parallel_attn=False,
                              multi_query=False, tie_word_embeddings=False),
    "opt": dict(num_hidden_layers=2, ffn_dim=80),
    "opt-projected": dict(model_type="opt", num_hidden_layers=2, ffn_dim=80, word_embed_proj_dim=32,
                          enable_bias=False),
    "mpt": dict(num_hidden_layers=2),
    "starcoder2": dict(num_hidden_layers=2),
    "starcoder2-no-bias": dict(model_type="starcoder2", num_hidden_layers=2, use_bias=False,
                               tie_word_embeddings=False),
    # transformers 5.24's DBRX attention reads attn_config.rope_theta, which its config class lacks, and
    # its experts read ffn_config.hidden_size, set from d_model before attribute_map's hidden_size lands.
    "dbrx": dict(num_hidden_layers=2, hidden_size=None, d_model=64,
                 attn_config=dict(kv_n_heads=2, rope_theta=1e4),
                 ffn_config=dict(ffn_hidden_size=48, moe_num_experts=4, moe_top_k=2)),
    # zero_expert_num=0: with identity experts transformers allocates gate_up rows vLLM does not
    # (tests/model_specs/test_classic_dense_families.py counts that case).
    "longcat_flash": dict(num_hidden_layers=4, n_routed_experts=4, zero_expert_num=0, moe_topk=2,
                          expert_ffn_hidden_size=32, ffn_hidden_size=80, kv_lora_rank=16, q_lora_rank=24,
                          qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16),
}


def _tiny_config(variant: str):
    overrides = dict(FAMILIES[variant])
    model_type = overrides.pop("model_type", variant)
    kwargs = {**TINY, **overrides}
    return transformers.AutoConfig.for_model(model_type, **{k: v for k, v in kwargs.items() if v is not None})


@pytest.mark.parametrize("variant", sorted(FAMILIES))
def test_num_params_equals_transformers(variant: str) -> None:
    config = _tiny_config(variant)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config))
    expected = sum(p.numel() for p in model.parameters())
    spec = from_hf_config(config.to_dict(), variant)
    assert spec.num_params == expected, f"{variant}: hkv {spec.num_params} vs transformers {expected}"
