"""The block size of a MiniMax-M3 model with sparse layers on a CUDA GPU (vLLM's minimax_m3 package
has NVIDIA and AMD code only; without a GPU named hkv keeps vLLM's default 16, as for DSA).

vLLM (0.32 and 0.33, models/minimax_m3/) runs MiniMax-M3's sparse layers on its own backends: the
attention on MINIMAX_M3_SPARSE (common/sparse_attention.py; the Triton / CUTLASS MSA aliases in
nvidia/sparse_attention_msa.py subclass it) and the index-key cache on MiniMaxM3IndexerBackend
(common/indexer.py). Both declare `get_supported_kernel_block_sizes` `[128]` ("page size == sparse
block size"), the dense layers' FLASH_ATTN multiples of 16. Without --block-size vLLM takes the
smallest size every backend accepts (platforms/interface.py `_preferred_block_size_for_backends`:
16 is refused by the MiniMax backends, the lcm of 16 and 128 is 128), so 128. A given block size
runs when it is a multiple of 128 (`AttentionBackend.supports_block_size`: hybrid blocks split a
cache block into kernel blocks); vLLM only finds out at worker start-up, hkv refuses it up front.
"""

from __future__ import annotations

from hkv.model_specs.indexer_cache import MINIMAX_M3_FAMILIES
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.errors import InvalidInputError
from hkv.planner.sparse_mla_backend import has_indexer_cache

MINIMAX_M3_KERNEL_BLOCK_LEN = 128
MINIMAX_M3_BACKENDS = "MINIMAX_M3_SPARSE + MINIMAX_M3_INDEXER"


def has_minimax_m3_index_cache(model: ModelSpec) -> bool:
    return model.family in MINIMAX_M3_FAMILIES and has_indexer_cache(model)


def minimax_m3_block_size(requested: int | None) -> int:
    """The block size vLLM runs a MiniMax-M3 model with sparse layers at; a requested size that is
    not a multiple of 128 raises."""
    if requested is None:
        return MINIMAX_M3_KERNEL_BLOCK_LEN
    if requested % MINIMAX_M3_KERNEL_BLOCK_LEN:
        raise InvalidInputError(
            f"block_size {requested}: vLLM's MiniMax-M3 sparse backends ({MINIMAX_M3_BACKENDS}) run 128-token "
            f"kernel blocks only; pass a multiple of {MINIMAX_M3_KERNEL_BLOCK_LEN} or leave --block-size out",
            fields=("block_size",))
    return requested
