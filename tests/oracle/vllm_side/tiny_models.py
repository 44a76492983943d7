"""Tiny random hybrid-attention models saved with HF transformers, for vLLM's CPU engine.

Constraints (environment.md section 5): head_dim 64 (vLLM's CPU attention rejects 16),
untied embeddings, a tiny vocabulary; no tokenizer (the engine runs with
skip_tokenizer_init=True). Weights are float32 and random: only the KV cache plan matters.

    build("gemma3", out_dir) -> out_dir     # 7 sliding (window 32) + 2 full: padded grouping
    build("llama4", out_dir)                # 6 chunked (chunk 256) + 2 full (NoPE) layers
    build("gpt_oss", out_dir)               # alternating sliding (window 16, sinks) / full
    build("granite_hybrid", out_dir)        # 6 Mamba2 + 2 full attention (GraniteMoeHybrid)
    build("mistral_window_covers_context", out_dir)  # sliding_window == max_position_embeddings
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

COMMON = dict(vocab_size=512, hidden_size=128, num_attention_heads=4, num_key_value_heads=2,
              head_dim=64, max_position_embeddings=4096, tie_word_embeddings=False,
              bos_token_id=1, eos_token_id=2, pad_token_id=0)


def _gemma3():
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    types = ["sliding_attention"] * 3 + ["full_attention"] + ["sliding_attention"] * 4 + ["full_attention"]
    cfg = Gemma3TextConfig(**COMMON, intermediate_size=256, num_hidden_layers=len(types),
                           layer_types=types, sliding_window=32, query_pre_attn_scalar=64,
                           initializer_range=0.5)
    return Gemma3ForCausalLM(cfg)


def _llama4():
    from transformers import Llama4ForCausalLM, Llama4TextConfig

    cfg = Llama4TextConfig(**COMMON, intermediate_size=128, intermediate_size_mlp=256,
                           num_hidden_layers=8, num_local_experts=2, num_experts_per_tok=1,
                           interleave_moe_layer_step=2, attention_chunk_size=256,
                           no_rope_layer_interval=4, initializer_range=0.5)
    return Llama4ForCausalLM(cfg)


def _gpt_oss():
    from transformers import GptOssConfig, GptOssForCausalLM

    types = ["sliding_attention", "full_attention"] * 2
    cfg = GptOssConfig(**COMMON, intermediate_size=128, num_hidden_layers=len(types),
                       layer_types=types, sliding_window=16, num_local_experts=4,
                       num_experts_per_tok=2, initializer_range=0.5)
    return GptOssForCausalLM(cfg)


def _granite_hybrid():
    from transformers import GraniteMoeHybridConfig, GraniteMoeHybridForCausalLM

    types = (["mamba"] * 3 + ["attention"]) * 2
    common = dict(COMMON, hidden_size=256)
    common.pop("head_dim")  # granite: head_dim = hidden_size / num_attention_heads = 64
    cfg = GraniteMoeHybridConfig(**common, intermediate_size=256, shared_intermediate_size=256,
                                 num_hidden_layers=len(types), layer_types=types,
                                 num_local_experts=0, mamba_n_heads=8, mamba_d_head=64,
                                 mamba_d_state=128, mamba_n_groups=1, mamba_d_conv=4, mamba_expand=2,
                                 initializer_range=0.5)
    return GraniteMoeHybridForCausalLM(cfg)


def _mistral_window_covers_context():
    from transformers import MistralConfig, MistralForCausalLM

    # One sliding_window, equal to max_position_embeddings, no layer_types (Ministral-8B's HF config)
    cfg = MistralConfig(**COMMON, intermediate_size=256, num_hidden_layers=2, sliding_window=4096,
                        initializer_range=0.5)
    return MistralForCausalLM(cfg)


BUILDERS = {"gemma3": _gemma3, "llama4": _llama4, "gpt_oss": _gpt_oss, "granite_hybrid": _granite_hybrid,
            "mistral_window_covers_context": _mistral_window_covers_context}


def build(kind: str, out_dir: str | Path) -> Path:
    out = Path(out_dir)
    torch.manual_seed(0)
    model = BUILDERS[kind]().to(torch.float32)
    model.config.torch_dtype = torch.float32  # the saved config says float32 (hkv reads it)
    model.save_pretrained(out, safe_serialization=True)
    return out


if __name__ == "__main__":
    print(build(sys.argv[1], sys.argv[2]))
