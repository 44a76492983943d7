"""The vision tower's part of vLLM's profile run (Qwen3-VL-style towers, model_specs/vision_tower.py).

`profile_run` (v1/worker/gpu_model_runner.py, read in 0.19, 0.24 and 0.27) builds `items` dummy
images of the largest size (the encoder budget over one image's tokens; logged "profiled with 4
image items of the maximum feature size"), concatenates their pixel values in pinned host memory
(multimodal/inputs.py `_reduce_data`), copies them to the GPU and runs the tower once on all of
them. The batch (`batched_dummy_mm_inputs`) stays referenced until profile_run returns, so its
pixel values are alive through the decoder's dummy forward and the sampler as well. The tower's
own tensors are freed before the decoder's dummy forward starts: the two peaks are sequential
(profile_activation.py takes the larger).

The tower's largest live set per patch, in the model dtype, on one rank of TP
(`Qwen3_VisionBlock`, `Qwen2_5_VisionAttention`, `Qwen3_VisionMLP`):
- attention: the residual, the position embeddings (held by the encoder metadata all along), the
  normed input and the projection's output, 4 x hidden; per rank the qkv output (3), the
  contiguous q/k copy (2), the rotated q/k (2) and the attention output (1), 8 x hidden / TP;
- MLP: the residual, the position embeddings and the normed input (3 x hidden), fc1's output and
  its activation (2 x intermediate / TP).
Patches are the items' tokens x spatial_merge_size².

On a unified-memory GPU (GB10, Jetson) vLLM's free memory is the system's, so pinned host
buffers count as non-torch memory: the dummy batch's staging copy (torch's host allocator keeps
the block cached after the copy) and the model runner's `inputs_embeds` buffer
(max_num_batched_tokens x hidden, allocated for every model, read in 0.11, 0.19, 0.20 and 0.24).
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.vision_tower import VisionTower

ATTENTION_REPLICATED_WIDTHS = 4  # residual, position embeddings, normed input, projection output
ATTENTION_SHARDED_WIDTHS = 8  # qkv 3, contiguous q/k 2, rotated q/k 2, attention output 1
MLP_REPLICATED_WIDTHS = 3  # residual, position embeddings, normed input
MLP_SHARDED_INTERMEDIATES = 2  # fc1 output and its activation


@dataclass(frozen=True)
class VisionProfile:
    """The dummy images of one profile run through one tower (per rank)."""

    tower: VisionTower
    items: int
    tokens_per_item: int
    dtype_bytes: int
    tp: int = 1

    @property
    def num_patches(self) -> int:
        return self.items * self.tokens_per_item * self.tower.merge_factor

    def pixel_bytes(self) -> int:
        """The dummy batch's pixel values, alive through the whole profile run."""
        return self.num_patches * self.tower.patch_values * self.dtype_bytes

    def transient_bytes(self) -> int:
        """The tower's largest live set besides the pixel values."""
        hidden, inter, tp = self.tower.hidden_size, self.tower.intermediate_size, self.tp
        attention = ATTENTION_REPLICATED_WIDTHS * hidden + ATTENTION_SHARDED_WIDTHS * hidden // tp
        mlp = MLP_REPLICATED_WIDTHS * hidden + MLP_SHARDED_INTERMEDIATES * inter // tp
        return self.num_patches * max(attention, mlp) * self.dtype_bytes


def vision_profile(tower: VisionTower | None, encoder_budget_tokens: int, tokens_per_item: int, dtype_bytes: int,
                   tp: int = 1) -> VisionProfile | None:
    """The profile run's dummy images, or None without a described tower or a known item size."""
    if tower is None or tokens_per_item <= 0:
        return None
    items = max(1, encoder_budget_tokens // tokens_per_item)
    return VisionProfile(tower, items, tokens_per_item, dtype_bytes, tp)


def pinned_host_bytes(profile: VisionProfile | None, max_num_batched_tokens: int, hidden_size: int,
                      dtype_bytes: int) -> int:
    """Pinned host memory the profile leaves behind: inputs_embeds' host half and the dummy batch's
    staging copy (non-torch memory on unified-memory GPUs only)."""
    staging = profile.pixel_bytes() if profile is not None else 0
    return max_num_batched_tokens * hidden_size * dtype_bytes + staging
