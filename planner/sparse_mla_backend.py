"""The block size of a DeepSeek Sparse Attention (DSA) model on a CUDA GPU.

A DSA model (MLA + the lightning indexer's key cache, model_specs/indexer_cache.py) runs its MLA
layers on a sparse MLA backend and its indexer caches on DeepseekV32IndexerBackend, all at the one
cache block size. The indexer backend's kernels take 64-token blocks only on CUDA (vLLM 0.32
v1/attention/backends/mla/indexer.py, DeepseekV32IndexerBackend.get_supported_kernel_block_sizes:
`[64]`), and the sparse MLA backends run multiples of 64 (FLASHMLA_SPARSE, flashmla_sparse.py) or 32
(FLASHINFER_MLA_SPARSE, flashinfer_mla_sparse.py), so vLLM's shared block size is 64 and a user's
block size must be a multiple of it. (The GLM-5.2 start-up record logs KV block size 64.)
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheRole
from hkv.model_specs.layer_desc import AttentionDesc
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.errors import InvalidInputError

DSA_KERNEL_BLOCK_LEN = 64
DSA_BACKENDS = "FLASHMLA_SPARSE/FLASHINFER_MLA_SPARSE + DEEPSEEK_V32_INDEXER"


def has_indexer_cache(model: ModelSpec) -> bool:
    return any(isinstance(layer, AttentionDesc) and layer.role is CacheRole.INDEXER for layer in model.cache_layers)


def dsa_block_size(requested: int | None) -> int:
    """The block size vLLM runs a DSA model with on CUDA; a requested size that is not a multiple
    of 64 raises (the indexer backend accepts no other)."""
    if requested is None:
        return DSA_KERNEL_BLOCK_LEN
    if requested % DSA_KERNEL_BLOCK_LEN:
        raise InvalidInputError(
            f"block_size {requested}: vLLM's DSA indexer backend (DEEPSEEK_V32_INDEXER) runs 64-token kernel "
            f"blocks only; pass a multiple of {DSA_KERNEL_BLOCK_LEN} or leave --block-size out",
            fields=("block_size",))
    return requested
