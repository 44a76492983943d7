"""The dummy sampler's peak in vLLM's profile run: logits of max_num_seqs rows and their copies.

`profile_run` ends with `_dummy_sampler_run` on the last rows of the dummy batch, one per dummy
request: min(max_num_batched_tokens, max_num_seqs) rows. `compute_logits` makes rows x vocab in
the model dtype; the V1 sampler then runs every branch (temperature 0.5, top-k vocab - 1,
top-p 0.9). Bytes held at once per logit element (read from each release's
v1/sample/sampler.py and v1/sample/ops/topk_topp_sampler.py):

- before 0.17 (`apply_top_k_top_p` sorts the whole vocab): the logits, their fp32 copy (4),
  the sorted values (4) and int64 indices (8), and the scratch of torch's CUDA sort for 128 rows
  or more (ATen SortStable.cu `segmented_sort_pairs`): int64 reverse indices (8) and cub's
  alternate key and value buffers (4 + 8). bf16: 38 bytes. (Below 128 rows torch sorts by a
  full sort with (index, segment) int2 pairs, 8 bytes more; not modelled.)
  The llm-d H100 0.11.0 logs (max_num_seqs 1,024) show 38.3-38.9 bytes per element whatever the
  model size: the sampler, not the layers, sets their peak.
- from 0.17 (Triton top-k/top-p masks in place): the logits, the fp32 copy, probs (4) and the
  exponential noise of random_sample (4). FlashInfer's fused path holds the same (masked
  logits, probs). bf16: 14 bytes.
- the V2 model runner (model_runner.py; attention-only models from 0.27, all from 0.32): its
  dummy batch is greedy, so only the logits and one fp32 processed copy. bf16: 6 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

FP32_BYTES = 4
# Per logit element, besides the logits themselves (model dtype).
SORT_EXTRA_BYTES = FP32_BYTES + 4 + 8 + (8 + 4 + 8)  # fp32 copy, sorted, int64 idx, sort scratch
IN_PLACE_EXTRA_BYTES = FP32_BYTES + 4 + 4  # fp32 copy, probs, exponential noise
GREEDY_EXTRA_BYTES = FP32_BYTES  # fp32 processed copy


@dataclass(frozen=True)
class SamplerProfile:
    """What the dummy sampler materializes: `rows` x `vocab_size` logits and their copies."""

    rows: int
    vocab_size: int
    logits_dtype_bytes: int
    extra_bytes_per_element: int  # SORT_EXTRA_BYTES, IN_PLACE_EXTRA_BYTES or GREEDY_EXTRA_BYTES

    @property
    def bytes_per_element(self) -> int:
        return self.logits_dtype_bytes + self.extra_bytes_per_element

    @property
    def peak_bytes(self) -> int:
        return self.rows * self.vocab_size * self.bytes_per_element


def sampler_profile(max_num_batched_tokens: int, max_num_seqs: int, vocab_size: int, logits_dtype_bytes: int,
                    *, sorts_vocab: bool, v2_runner: bool) -> SamplerProfile:
    """The dummy sampler of a release: sorting (< 0.17), in place (>= 0.17) or the V2 runner's greedy one."""
    rows = min(max_num_batched_tokens, max_num_seqs)
    extra = GREEDY_EXTRA_BYTES if v2_runner else SORT_EXTRA_BYTES if sorts_vocab else IN_PLACE_EXTRA_BYTES
    return SamplerProfile(rows, vocab_size, logits_dtype_bytes, extra)
