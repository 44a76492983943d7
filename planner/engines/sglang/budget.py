"""The bytes SGLang sizes its pools from (kv_cache_configurator.py _profile_available_bytes).

SGLang takes a baseline of free GPU memory before it loads the model (pre_model_load_memory),
loads the weights, and measures free memory again; the pools get
    rest = free_after_weights - free_before_load x (1 - mem_fraction_static)
less SGLANG_VLM_CACHE_SIZE_MB (100 MiB) for multimodal models from 0.5.18, in GiB floats. CUDA
graphs and activations live in the (1 - mem_fraction_static) slack. hkv predicts the two free
figures from the GPU table and the shared weights term (planner/budget/): free before load is the
card's CUDA total less the CUDA context and, at TP > 1, NCCL's buffers (both made before the
baseline); free after weights is that less the weights as loaded.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hkv.planner.budget.budget_term import BudgetTerm
from hkv.planner.budget.gpu_table import GIB

# The CUDA context and allocator state SGLang's baseline already misses on a data-center GPU (an
# estimate: torch's free memory right after CUDA initialization on H100/H200 is 0.4-0.6 GiB below
# the total); the band below covers that range.
BASELINE_CONTEXT_BYTES = GIB // 2
# NCCL's buffers per doubling of TP: the 0.42 GiB the llm-d H100 logs (vLLM 0.11, TP 2) showed,
# kept apart from vLLM's refitted constants since SGLang allocates its own communicators.
COMM_BYTES_PER_TP_DOUBLING = int(0.42 * GIB)
BASELINE_CONTEXT_BAND_BYTES = GIB // 8
VLM_CACHE_MIB = 100  # SGLANG_VLM_CACHE_SIZE_MB


def baseline_overhead_bytes(tp_size: int) -> int:
    """Memory gone before SGLang's baseline: the CUDA context, plus NCCL's buffers at TP > 1."""
    doublings = max(0, tp_size.bit_length() - 1)
    return BASELINE_CONTEXT_BYTES + COMM_BYTES_PER_TP_DOUBLING * doublings


@dataclass(frozen=True)
class SglangBudget:
    """SGLang's profile inputs for one rank, and the rest they give."""

    free_before_load_bytes: int
    weights: BudgetTerm
    mem_fraction_static: float
    multimodal_reservation_mib: int  # 0 unless multimodal (and the release reserves it)
    world_size: int = 1  # TP x PP: above 1 both free figures pass a float32 all-reduce (MIN over ranks)

    @property
    def free_after_weights_bytes(self) -> int:
        return self.free_before_load_bytes - self.weights.bytes

    @property
    def rest_gib(self) -> float:
        """SGLang's rest_memory: GiB floats, in its order of operations."""
        slack = self._measured(self.free_before_load_bytes) / GIB * (1 - self.mem_fraction_static)
        return self._measured(self.free_after_weights_bytes) / GIB - slack - self.multimodal_reservation_mib / 1024

    def _measured(self, free_bytes: int) -> float:
        # get_available_gpu_memory(distributed=True) reduces the free bytes as a float32 tensor.
        if self.world_size == 1:
            return float(free_bytes)
        return float(struct.unpack("f", struct.pack("f", free_bytes))[0])

    @property
    def available_bytes(self) -> int:
        """The profiled rest in bytes (what `resolve_pools` takes); <= 0 when the weights leave none."""
        return int(self.rest_gib * GIB)

    @property
    def minimum_mem_fraction_static(self) -> float:
        """The smallest mem_fraction_static that leaves any rest (SGLang's error suggests it)."""
        return 1 - self.free_after_weights_bytes / self.free_before_load_bytes
