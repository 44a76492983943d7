"""The dummy sampler's peak in vLLM's profile run: logits of max_num_seqs rows and their copies.

`profile_run` ends with `_dummy_sampler_run` on the last rows of the dummy batch, one per dummy
request: min(max_num_batched_tokens, max_num_seqs) rows. `compute_logits` makes rows x vocab in
the model dtype; the V1 sampler then runs every branch (temperature 0.5, top-k vocab - 1,
top-p 0.9). Bytes held at once per logit element, by the path the sampler takes (read from each
release's v1/sample/sampler.py and v1/sample/ops/topk_topp_sampler.py):

- `sort` (`apply_top_k_top_p` sorts the whole vocab; up to 0.16 wherever FlashInfer's sampler is
  not used): the logits, their fp32 copy (4), the sorted values (4) and int64 indices (8), and the
  scratch of torch's CUDA sort for 128 rows or more (ATen SortStable.cu `segmented_sort_pairs`):
  int64 reverse indices (8) and cub's alternate key and value buffers (4 + 8). bf16: 38 bytes.
  (Below 128 rows torch sorts by a full sort with (index, segment) int2 pairs, 8 bytes more; not
  modelled.) The llm-d H100 0.11.0 logs (max_num_seqs 1,024) show 38.3-38.9 bytes per element
  whatever the model size: the sampler, not the layers, sets their peak.
- `flashinfer` (0.10 to 0.11.0 use FlashInfer's sampler by default where it is installed; the
  vllm/vllm-openai images ship it, the pip wheel does not require it before 0.11.1):
  `top_k_top_p_sampling_from_logits` masks a copy of the fp32 logits (4) and takes its softmax (4)
  besides the logits and their fp32 copy, no sort. bf16: 14 bytes. flashinfer-ai/flashinfer#1180
  shows the official image's "Available KV cache memory" drop from 4.00 to 2.49 GiB when
  VLLM_USE_FLASHINFER_SAMPLER=0 forces the sort.
- `in_place` (from 0.17: Triton top-k/top-p masks in place): the logits, the fp32 copy, probs (4)
  and the exponential noise of random_sample (4). bf16: 14 bytes.
- `greedy` (the V2 model runner, v1/worker/gpu/model_runner.py `_dummy_sampler_run`, at 0.25):
  its dummy requests are never added, so they keep SamplingStates' initial values (temperature 0,
  top-k = vocab, top-p 1, no logprobs: v1/worker/gpu/sample/states.py), and 0.25's
  `Sampler.apply_sampling_params` still copies the logits to fp32 first
  (v1/worker/gpu/sample/sampler.py): the logits and that copy. bf16: 6 bytes.
- `logits` (the V2 runner, 0.26 to 0.32): 0.26's `apply_sampling_params` works on the logits in
  place (its processors upcast inside the Triton kernels), and 0.27 to 0.32 return the logits
  untouched when no dummy request needs processing (`_requires_logits_processing`, from 0.29
  `needs_logits_processing`, all False); `gumbel_sample` (gpu/sample/gumbel.py) keeps only
  rows x ceil(vocab / 1024) int64 + fp32 block maxima. The logits alone: bf16 2 bytes.
- from 0.33 the V2 runner's `_dummy_sampler_run` (v1/worker/gpu/model_runner.py ~l.1008) samples the
  same logits again with `SamplingParams.for_sampler_warmup()` (top-k 50, top-p 0.9, min-p,
  penalties, logit bias, logprobs): an fp32 copy that the Triton processors change in place, then
  FlashInfer's `top_k_top_p_sampling_from_logits` (v1/worker/gpu/sample/sampler.py `_sample_random`),
  so the `flashinfer` path, where vLLM's FlashInfer sampler runs: CUDA at compute capability
  8.0-12.1 with more than 16 SMs (topk_topp_sampler.py `flashinfer_sampler_supported`; vLLM's CUDA
  requirements install FlashInfer). Elsewhere the Triton top-k/top-p masks in place with a per-SM
  buffer and the Gumbel sampler draws its noise in the kernel: the `greedy` figure. The CPU platform
  skips the second pass.

Rows, every path: `compute_logits` runs on the dummy batch's last token per request, min(max_num_batched_tokens,
max_num_seqs) rows (V1 `_dummy_run`'s logit indices; V2 `InputBatch.make_dummy`'s
`logits_indices = query_start_loc[1:] - 1` for min(num_tokens, max_num_reqs) requests), not one per token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SamplerPath = Literal["sort", "flashinfer", "in_place", "greedy", "logits"]
FP32_BYTES = 4
# Per logit element, besides the logits themselves (model dtype).
EXTRA_BYTES_BY_PATH: dict[SamplerPath, int] = {
    "sort": FP32_BYTES + 4 + 8 + (8 + 4 + 8),  # fp32 copy, sorted, int64 idx, sort scratch
    "flashinfer": FP32_BYTES + 4 + 4,  # fp32 copy, top-k masked copy, probs
    "in_place": FP32_BYTES + 4 + 4,  # fp32 copy, probs, exponential noise
    "greedy": FP32_BYTES,  # fp32 processed copy
    "logits": 0,  # V2 0.26-0.32: the model-dtype logits, changed in place or not at all
}
# FlashInferBackend.supports_compute_capability (v1/attention/backends/flashinfer.py, 0.33: SM80 floor).
FLASHINFER_SAMPLER_CAPABILITIES = ((8, 0), (12, 1))


@dataclass(frozen=True)
class SamplerProfile:
    """What the dummy sampler materializes: `rows` x `vocab_size` logits and their copies."""

    rows: int
    vocab_size: int
    logits_dtype_bytes: int
    path: SamplerPath

    @property
    def bytes_per_element(self) -> int:
        return self.logits_dtype_bytes + EXTRA_BYTES_BY_PATH[self.path]

    @property
    def peak_bytes(self) -> int:
        return self.rows * self.vocab_size * self.bytes_per_element


def sampler_profile(max_num_batched_tokens: int, max_num_seqs: int, vocab_size: int, logits_dtype_bytes: int,
                    path: SamplerPath) -> SamplerProfile:
    """The dummy sampler taking `path` (sampler_paths says which a release and install take)."""
    return SamplerProfile(min(max_num_batched_tokens, max_num_seqs), vocab_size, logits_dtype_bytes, path)


def flashinfer_sampler_supported(capability: tuple[int, int] | None) -> bool:
    """Whether vLLM's FlashInfer top-k/top-p sampler runs on a CUDA GPU of `capability` (every GPU
    hkv knows has more than 16 SMs); None: not a CUDA GPU."""
    low, high = FLASHINFER_SAMPLER_CAPABILITIES
    return capability is not None and low <= capability <= high


def sampler_paths(*, sorts_vocab: bool, flashinfer_by_default: bool, flashinfer_installed: bool | None,
                  v2_runner: bool, v2_flashinfer_warmup: bool = False,
                  v2_copies_logits: bool = True) -> tuple[SamplerPath, ...]:
    """The path(s) the dummy sampler may take, the likelier first: one when the release and the
    install decide it; ("sort", "flashinfer") where FlashInfer would be used but nobody said
    whether it is installed (the sort is the larger peak, so the point estimate stays on the
    side that fits). `v2_flashinfer_warmup`: the V2 runner's warmup pass samples through FlashInfer
    (0.33 on a GPU flashinfer_sampler_supported accepts). `v2_copies_logits`: the V2 dummy sampler
    copies the logits to fp32 (VllmRules.v2_sampler_copies_logits: 0.25 and 0.33, not 0.26-0.32)."""
    if v2_runner:
        if v2_flashinfer_warmup:
            return ("flashinfer",)
        return ("greedy",) if v2_copies_logits else ("logits",)
    if not sorts_vocab:
        return ("in_place",)
    if not flashinfer_by_default or flashinfer_installed is False:
        return ("sort",)
    return ("flashinfer",) if flashinfer_installed else ("sort", "flashinfer")
