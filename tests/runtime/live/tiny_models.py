"""Tiny random transformers models saved to disk, and transformers' own answers for them.

hidden 64, head_dim 16, 4 query / 2 KV heads, vocab 256; windows and chunks of 8 tokens so that
prompts of 20-40 tokens cross them. Untied embeddings and initializer_range 0.5 make greedy
tokens distinct (a tiny tied model repeats its last input token). Every model gets its own
config object (two models built from one config share their attention implementation).
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=256,
            intermediate_size=96, max_position_embeddings=256, tie_word_embeddings=False,
            initializer_range=0.5, pad_token_id=0, bos_token_id=1, eos_token_id=2)

# family -> (model_type, overrides): every cache kind hkv runs, and one family per quirk
FAMILIES: dict[str, tuple[str, dict]] = {
    "gemma2": ("gemma2", dict(num_hidden_layers=4, sliding_window=8)),  # softcap
    "gemma3": ("gemma3_text", dict(num_hidden_layers=4, sliding_window=8,
                                   layer_types=["sliding_attention", "full_attention"] * 2)),
    "mistral": ("mistral", dict(num_hidden_layers=2, sliding_window=8)),  # sliding on every layer
    "gpt_oss": ("gpt_oss", dict(num_hidden_layers=2, sliding_window=8, num_local_experts=4,
                                num_experts_per_tok=2)),  # sinks, MoE
    # chunked local + NoPE full; floor_scale 4 makes the NoPE temperature vary within the prompts
    "llama4": ("llama4_text", dict(num_hidden_layers=4, attention_chunk_size=8, num_local_experts=2,
                                   intermediate_size_mlp=96, interleave_moe_layer_step=2, floor_scale=4,
                                   attn_temperature_tuning=True, no_rope_layers=[1, 1, 1, 0])),
    # layers 4, 5 read the KV of layers 3 (sliding) and 2 (full)
    "gemma3n": ("gemma3n_text", dict(
        num_hidden_layers=6, sliding_window=8, num_kv_shared_layers=2,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
        hidden_size_per_layer_input=16, vocab_size_per_layer_input=256, laurel_rank=8, altup_num_inputs=2,
        activation_sparsity_pattern=[0.0] * 6)),
    "llama": ("llama", dict(num_hidden_layers=2)),
    "qwen3": ("qwen3", dict(num_hidden_layers=2)),
}
LOCAL_FAMILIES = ("gemma2", "gemma3", "mistral", "gpt_oss", "llama4", "gemma3n")


def tiny_config(family: str, **overrides):
    model_type, family_overrides = FAMILIES[family]
    return AutoConfig.for_model(model_type, **{**TINY, **family_overrides, **overrides})


def save_tiny_model(family: str, directory: Path, seed: int = 0, **overrides) -> Path:
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(copy.deepcopy(tiny_config(family, **overrides)))
    model.save_pretrained(directory)
    return directory


def random_prompts(lengths: tuple[int, ...], seed: int = 1, vocab_size: int = 256) -> list[list[int]]:
    """Token ids in [3, vocab_size): no pad / bos / eos."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab_size, (n,), generator=generator).tolist() for n in lengths]


def load_reference(directory: Path):
    """The saved model with transformers' eager attention (its own masks and caches)."""
    return AutoModelForCausalLM.from_pretrained(directory, attn_implementation="eager").eval()


def reference_greedy(model, prompt: list[int], max_new_tokens: int, eos_token_id=None) -> list[int]:
    """transformers' greedy generate; with eos_token_id None it never stops early."""
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=max_new_tokens, do_sample=False,
                             eos_token_id=eos_token_id, pad_token_id=0)
    return out[0, len(prompt):].tolist()


def reference_logits(model, tokens: list[int]) -> torch.Tensor:
    """[len(tokens), vocab] logits of one eager forward over the whole sequence."""
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].float()
