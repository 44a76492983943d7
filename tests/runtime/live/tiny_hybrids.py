"""Tiny random recurrent hybrids (one per family hkv run executes) and transformers' answers.

hidden 128, 2 query heads / 1 KV head of head_dim 64, vocab 256, untied embeddings; Mamba2
layers of 4 heads x 64 with d_state 16, kernel 4 and scan chunks of 8 tokens, so that prompts of
11-61 tokens cross scan chunks, conv kernels, 4-token state blocks and 16-token step budgets.
initializer_range 0.1: large enough that greedy tokens are distinct, small enough that
transformers' own decode path stays within 1e-5 of its prefill path (at 0.5 Nemotron-H's
decode steps drift 2e-2 from its own full forward, which would hide any error of hkv's).
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

BASE = dict(hidden_size=128, num_attention_heads=2, num_key_value_heads=1, head_dim=64, vocab_size=256,
            intermediate_size=128, max_position_embeddings=512, tie_word_embeddings=False,
            initializer_range=0.1, pad_token_id=0, bos_token_id=1, eos_token_id=2)
MAMBA2 = dict(mamba_n_heads=4, mamba_d_head=64, mamba_d_state=16, mamba_d_conv=4, mamba_n_groups=1,
              mamba_expand=2, mamba_chunk_size=8)
MOE = dict(num_experts_per_tok=2)

# family -> (model_type, overrides)
HYBRIDS: dict[str, tuple[str, dict]] = {
    "bamba": ("bamba", dict(num_hidden_layers=4, attn_layer_indices=[1, 3], **MAMBA2)),
    "granitemoehybrid": ("granitemoehybrid", dict(
        num_hidden_layers=4, layer_types=["mamba", "attention"] * 2, num_local_experts=4,
        shared_intermediate_size=64, **MOE, **MAMBA2)),
    # M = Mamba2, * = attention, - = MLP only. time_step_min ~0: transformers' NemotronH clamps dt
    # at time_step_min in its chunk scan but not in its one-token update, and hkv splits prompts
    # at state boundaries where generate() does not (a 37-token prompt runs as 36 + 1 tokens), so
    # the clamp alone made hkv and generate differ by 2.5e-4 on a token neither got wrong.
    "nemotron_h": ("nemotron_h", dict(
        num_hidden_layers=4, hybrid_override_pattern="M*-M", mamba_num_heads=4, mamba_head_dim=64,
        ssm_state_size=16, conv_kernel=4, n_groups=1, expand=2, chunk_size=8, time_step_min=1e-9)),
    # Mamba1 + attention, MoE every other layer
    "jamba": ("jamba", dict(
        num_hidden_layers=4, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
        expert_layer_offset=1, num_experts=4, mamba_d_state=16, mamba_d_conv=4, mamba_expand=2,
        mamba_dt_rank=8, **MOE)),
    # gated delta net + full attention, MoE
    "qwen3_next": ("qwen3_next", dict(
        num_hidden_layers=4, layer_types=["linear_attention", "full_attention"] * 2, linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4,
        num_experts=4, moe_intermediate_size=64, shared_expert_intermediate_size=64, decoder_sparse_step=1,
        **MOE)),
    # attention and Mamba2 side by side in every layer
    "falcon_h1": ("falcon_h1", dict(num_hidden_layers=3, mamba_d_ssm=256, **MAMBA2)),
    # lightning attention (blocks of 8) + full attention, MoE
    "minimax": ("minimax", dict(
        num_hidden_layers=4, layer_types=["linear_attention", "full_attention"] * 2, num_local_experts=4,
        block_size=8, **MOE)),
    # short conv (kernel 3, conv state only) + full attention
    "lfm2": ("lfm2", dict(num_hidden_layers=4, layer_types=["conv", "full_attention"] * 2, conv_L_cache=3,
                          block_dim=128, block_ff_dim=128, norm_eps=1e-5)),
    # Qwen3.5's text model: gated delta net + full attention, dense
    "qwen3_5": ("qwen3_5_text", dict(
        num_hidden_layers=4, layer_types=["linear_attention", "full_attention"] * 2, linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4)),
}


def save_hybrid(family: str, directory: Path, seed: int = 0) -> Path:
    model_type, overrides = HYBRIDS[family]
    config = AutoConfig.for_model(model_type, **{**BASE, **copy.deepcopy(overrides)})
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(config).save_pretrained(directory)
    return directory


def reference_generate(model, prompt: list[int], max_new_tokens: int) -> tuple[list[int], torch.Tensor]:
    """transformers' greedy generate (its own cache: prefill once, then one token per step):
    the tokens and the [max_new_tokens, vocab] float32 logits they were picked from."""
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=max_new_tokens, do_sample=False,
                             eos_token_id=None, pad_token_id=0, output_logits=True, return_dict_in_generate=True)
    return out.sequences[0, len(prompt):].tolist(), torch.cat(out.logits).float()
