"""The multimodal part of vLLM's profile run: the encoder cache's dummy outputs.

For a model with a multimodal class (`...ForConditionalGeneration`) vLLM first runs the encoder
on dummy items of the modality with the most tokens and keeps their embeddings in the encoder
cache through the dummy forward and the sampler (`profile_run`). The encoder budget
(`MultiModalBudget.get_encoder_budget`) is max(max_num_batched_tokens, the largest item's tokens),
e.g. 16,384 tokens for Qwen3.5's images (logged: "Encoder cache will be initialized with a
budget of 16384 tokens, and profiled with 1 image items"). The embeddings take budget x hidden
x dtype bytes.

The vision tower's own run (its pixel values and transient peak) is vision_profile.py's, for
towers whose config the model spec kept. `--limit-mm-per-prompt` 0 for every modality
(text-only serving) skips all of it.
"""

from __future__ import annotations

# Tokens of the largest dummy item, where the family's processor is known (vLLM logs).
MAX_TOKENS_PER_ITEM = {"qwen3_5_text": 16384, "qwen3_5_moe_text": 16384, "gemma3_text": 256, "gemma3": 256}


def is_multimodal(architectures: tuple[str, ...]) -> bool:
    return any(name.endswith("ForConditionalGeneration") for name in architectures)


def tokens_per_item(family: str) -> int:
    """Tokens of the largest dummy item; 0 where the family's processor is not known."""
    return MAX_TOKENS_PER_ITEM.get(family, 0)


def encoder_budget_tokens(family: str, max_num_batched_tokens: int) -> int:
    return max(max_num_batched_tokens, tokens_per_item(family))


def encoder_outputs_bytes(architectures: tuple[str, ...], family: str, max_num_batched_tokens: int,
                          hidden_size: int, dtype_bytes: int) -> int:
    """Bytes the dummy encoder outputs hold during the profile run; 0 for a text-only model."""
    if not is_multimodal(architectures):
        return 0
    return encoder_budget_tokens(family, max_num_batched_tokens) * hidden_size * dtype_bytes
