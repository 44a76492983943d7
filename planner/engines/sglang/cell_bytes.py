"""Bytes one token costs in SGLang 0.5.23's KV pools, per model kind, as SGLang computes them.

SGLang sizes a pool by a per-token "cell" summed over the pool's layers
(model_executor/pool_configurator.py), not by vLLM's pages:
  MHA / GQA   max(1, kv_heads // tp) x (head_dim + v_head_dim) x kv dtype bytes, per layer
  MLA         (kv_lora_rank + qk_rope_head_dim) x kv dtype bytes, per layer, on every rank
  DSA         the MLA latent (FP8 with per-128 scales and a bf16 rope where the backend keeps scales:
              kv_lora_rank + kv_lora_rank / 128 x 4 + 2 x qk_rope_head_dim bytes) plus each indexer
              layer's index key with its scale (index_head_dim + index_head_dim / 128 x 4 bytes, uint8)
  MiniMax-M3  K/V of every layer plus each sparse layer's index key (K only where the config disables
              the index value) in the model's dtype (the KV cache's where Hopper keeps FP8 KV)
  hybrid SWA  full layers at the full shape, sliding layers at their own shape, in two pools.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.sglang.model_view import SglangModel
from hkv.planner.errors import InvalidInputError

# --kv-cache-dtype -> element bytes ("auto": the model's dtype). FP4 formats keep scale buffers
# hkv does not model.
_KV_DTYPE_BYTES = {"fp8_e4m3": 1, "fp8_e5m2": 1, "fp8": 1, "bfloat16": 2, "bf16": 2, "float16": 2, "half": 2,
                   "float32": 4}
DSA_QUANT_BLOCK = 128  # DSATokenToKVPool.quant_block_size: one fp32 scale per 128 latent elements
DSA_ROPE_BYTES = 2  # the rope part stays bf16 in the scaled FP8 layout
DSA_ROPE_HEAD_DIM = 64
BLACKWELL_MAJOR = 10  # compute capability from which DSA defaults to an FP8 cache and trtllm kernels


@dataclass(frozen=True)
class KvDtype:
    """The KV cache element size SGLang uses, whether a DSA latent keeps per-block scales, and the
    element size of MiniMax-M3's index keys."""

    element_bytes: int
    dsa_scaled_fp8: bool = False
    sparse_index_bytes: int = 0


def kv_dtype(model: SglangModel, kv_cache_dtype: str, model_dtype_bytes: int,
             compute_capability: tuple[int, int]) -> KvDtype:
    """SGLang's KV dtype for `--kv-cache-dtype`. DSA models default to FP8 on Blackwell (the
    trtllm kernels read it raw, no scales) and to bf16 before; an FP8 cache elsewhere on CUDA
    (flashmla_kv, flashinfer_sparse_mla) keeps the scaled layout (_dsa_kv_cache_dtype_default,
    calculate_mla_kv_cache_dim)."""
    major = compute_capability[0]
    if model.is_dsa:
        if kv_cache_dtype == "auto":
            return KvDtype(1) if major >= BLACKWELL_MAJOR else KvDtype(2)
        if kv_cache_dtype not in ("fp8_e4m3", "bfloat16", "bf16"):
            raise InvalidInputError(f"kv_cache_dtype: SGLang serves DSA models with bfloat16 or fp8_e4m3, got "
                                    f"{kv_cache_dtype!r}", fields=("kv_cache_dtype",))
        if kv_cache_dtype == "fp8_e4m3":
            return KvDtype(1, dsa_scaled_fp8=major < BLACKWELL_MAJOR)
        return KvDtype(2)
    if kv_cache_dtype == "auto":
        element = model_dtype_bytes
    elif kv_cache_dtype in _KV_DTYPE_BYTES:
        element = _KV_DTYPE_BYTES[kv_cache_dtype]
    else:
        raise InvalidInputError(
            f"kv_cache_dtype {kv_cache_dtype!r} is not one hkv sizes for SGLang (auto, bfloat16, float16, "
            f"fp8_e4m3, fp8_e5m2)", fields=("kv_cache_dtype",))
    # get_minimax_sparse_index_dtype: the model's dtype; the KV cache's for FP8 E4M3 KV on Hopper, and
    # on SM100 where MiniMax-M3 runs its attention GEMMs in FP8 (m3_fp8_attn_gemm_enabled).
    fp8_index = kv_cache_dtype in ("fp8_e4m3", "fp8") and compute_capability in ((9, 0), (10, 0), (10, 3))
    index = element if fp8_index else model_dtype_bytes
    return KvDtype(element, sparse_index_bytes=index if model.sparse_indexer else 0)


@dataclass(frozen=True)
class CellBytes:
    """Per-token bytes of one layer in each pool, and the pools' layer counts (one rank).

    `full_per_layer` already holds a DSA model's latent; `indexer` is all indexer layers' keys
    together (they live beside the full pool and scale with its tokens)."""

    full_per_layer: int
    full_layers: int
    swa_per_layer: int
    swa_layers: int
    indexer: int

    @property
    def full(self) -> int:
        """Bytes one token of the full pool costs over all its layers (SGLang's cell_size)."""
        return self.full_per_layer * self.full_layers + self.indexer

    @property
    def swa(self) -> int:
        return self.swa_per_layer * self.swa_layers


def cell_bytes(model: SglangModel, tp: int, dtype: KvDtype) -> CellBytes:
    """SGLang's per-token cell of `model` at attention TP `tp`."""
    if model.mla_dim is not None:
        full_per_layer = _mla_bytes(model, model.mla_dim, dtype) if model.is_dsa else model.mla_dim * dtype.element_bytes
    elif model.full is not None:
        full_per_layer = model.full.bytes_per_token(tp, dtype.element_bytes)
    else:
        full_per_layer = 0
    swa_per_layer = 0
    if model.swa is not None:
        # An MLA sliding layer keeps the same latent (swa_kv_lora_rank = kv_lora_rank).
        swa_per_layer = full_per_layer if model.is_mla else model.swa.bytes_per_token(tp, dtype.element_bytes)
    index_bytes = dtype.sparse_index_bytes if model.sparse_indexer else 1  # DSA's keys are uint8
    # MiniMax-M3: a sparse layer that keeps its index value stores a second buffer of the key's size.
    index_buffers = model.indexer_layers + (model.extras.sparse_index_value_layers if model.sparse_indexer else 0)
    return CellBytes(full_per_layer, model.full_layers, swa_per_layer, model.swa_layers,
                     index_buffers * model.indexer_elements * index_bytes)


def _mla_bytes(model: SglangModel, mla_dim: int, dtype: KvDtype) -> int:
    if not dtype.dsa_scaled_fp8:
        return mla_dim * dtype.element_bytes
    # hkv's latent is kv_lora_rank + qk_rope_head_dim; every DSA model SGLang serves has a 64-wide rope.
    rope = model.extras.qk_rope_head_dim or DSA_ROPE_HEAD_DIM
    kv_lora_rank = mla_dim - rope
    return kv_lora_rank + kv_lora_rank // DSA_QUANT_BLOCK * 4 + rope * DSA_ROPE_BYTES
