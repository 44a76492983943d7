"""The torch peak of vLLM's profile run: the dummy forward on max_num_batched_tokens, then the sampler.

`profile_run` runs `_dummy_run(max_num_batched_tokens)`; its hidden states stay alive while the
dummy sampler runs (`_dummy_sampler_run`), and the multimodal encoder's cached outputs stay alive
through both. The forward's own tensors are freed before the sampler starts, so the peak is

    kept hidden states + encoder outputs + max(forward's other tensors, sampler)

and, for a multimodal model whose vision tower is described (vision_profile.py), the tower's
phase comes first: peak = pixel values + max(tower's live set, the decoder's phase above).

The forward's largest live set, per token, in the model dtype (one rank of TP):
- dense MLP: the residual and the normed input (2 x hidden, one of them the kept output),
  gate_up (2 x intermediate / TP) and the activation's output (intermediate / TP);
- fused MoE (`modular_kernel` workspaces): top_k copies of each token, workspace13 of
  max(2 x moe_intermediate / TP, hidden) and workspace2 of moe_intermediate / TP, plus the
  residual and normed input.
Attention's qkv and output (a few x hidden) stay below these for every catalog model.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ForwardShape:
    """What the dummy forward's per-token tensors are made of (one rank)."""

    hidden_size: int
    intermediate_size: int  # the dense MLP's (0 when every layer is MoE)
    dtype_bytes: int
    tp: int = 1
    num_experts_per_tok: int = 0  # 0: no MoE layer
    moe_intermediate_size: int = 0
    # Elements per token a mixer layer's compiled piece keeps alive through the MLP after it
    # (mixer_liveness.py); 0 where none is modelled (eager, or no such mixer).
    mixer_held_elements: int = 0

    def dense_bytes_per_token(self) -> int:
        """Besides the kept hidden state: the normed input, gate_up and the activation's output."""
        return (self.hidden_size + 3 * self.intermediate_size // self.tp) * self.dtype_bytes

    def moe_bytes_per_token(self) -> int:
        """Besides the kept hidden state: the normed input and the fused-MoE workspaces."""
        if not self.num_experts_per_tok:
            return 0
        n = self.moe_intermediate_size // self.tp
        workspaces = self.num_experts_per_tok * (max(2 * n, self.hidden_size) + n)
        return (self.hidden_size + workspaces) * self.dtype_bytes

    def kept_bytes(self, num_tokens: int) -> int:
        """The dummy run's output hidden states, alive through the sampler."""
        return num_tokens * self.hidden_size * self.dtype_bytes

    def forward_extra_bytes(self, num_tokens: int) -> int:
        """The forward's largest live set besides the kept hidden states."""
        mlp = max(self.dense_bytes_per_token(), self.moe_bytes_per_token())
        return num_tokens * (mlp + self.mixer_held_elements * self.dtype_bytes)


@dataclass(frozen=True)
class ActivationPeak:
    """The profile run's torch peak increase, by part (bytes)."""

    kept_bytes: int
    forward_extra_bytes: int
    sampler_bytes: int
    encoder_bytes: int = 0
    pixel_bytes: int = 0  # the dummy images' pixel values, alive through the whole run
    vision_bytes: int = 0  # the vision tower's transient live set (before the decoder's forward)
    workspace_bytes: int = 0  # workspaces reserved during the forward and kept (indexer_workspace.py)

    def decoder_bytes(self) -> int:
        """The decoder's phase: kept hidden states, cached encoder outputs, reserved workspaces,
        forward or sampler."""
        return (self.kept_bytes + self.encoder_bytes + self.workspace_bytes
                + max(self.forward_extra_bytes, self.sampler_bytes))

    @property
    def bytes(self) -> int:
        return self.pixel_bytes + max(self.vision_bytes, self.decoder_bytes())

    @property
    def dominant(self) -> str:
        if self.vision_bytes > self.decoder_bytes():
            return "vision tower"
        return "sampler" if self.sampler_bytes >= self.forward_extra_bytes else "forward"


def activation_peak(shape: ForwardShape, num_tokens: int, sampler_bytes: int, encoder_bytes: int = 0,
                    pixel_bytes: int = 0, vision_bytes: int = 0, workspace_bytes: int = 0) -> ActivationPeak:
    """The peak of a profile run on `num_tokens` (max_num_batched_tokens) dummy tokens; the vision
    tower's phase (vision_profile.py) runs before the decoder's and is freed first."""
    return ActivationPeak(shape.kept_bytes(num_tokens), shape.forward_extra_bytes(num_tokens), sampler_bytes,
                          encoder_bytes, pixel_bytes, vision_bytes, workspace_bytes)
