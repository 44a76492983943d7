"""Next-token sampling: greedy, or temperature + top-p from a seeded torch.Generator."""

from __future__ import annotations

import torch

from hkv.runtime.live.run_config import SamplingConfig

__all__ = ["Sampler", "SamplingConfig"]


class Sampler:
    def __init__(self, config: SamplingConfig, device: torch.device | str = "cpu") -> None:
        self.config = config
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(config.seed)

    def sample(self, logits: torch.Tensor) -> list[int]:
        """One token id per row of logits [num_rows, vocab_size]."""
        if logits.shape[0] == 0:
            return []
        if self.config.is_greedy:
            return logits.argmax(dim=-1).tolist()
        probs = torch.softmax(logits.float() / self.config.temperature, dim=-1)
        if self.config.top_p < 1:
            sorted_probs, order = probs.sort(dim=-1, descending=True)
            # drop a token when the tokens before it already reach top_p (the first always stays)
            drop = sorted_probs.cumsum(dim=-1) - sorted_probs >= self.config.top_p
            sorted_probs = sorted_probs.masked_fill(drop, 0.0)
            probs = torch.zeros_like(probs).scatter_(-1, order, sorted_probs)
        choice = torch.multinomial(probs, 1, generator=self.generator)
        return choice[:, 0].tolist()
