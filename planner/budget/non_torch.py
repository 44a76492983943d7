"""The non-torch memory of one rank: what the GPU lost during start-up that torch did not allocate.

vLLM measures it (utils/mem_utils.memory_profiling) as the free-memory drop since the engine's
first snapshot minus torch's reserved memory; from 0.27 it prints "consumed memory (weights +
non-torch)", the whole free-memory drop, so persistent torch buffers (input buffers, the Triton
sampler's per-SM scratch, workspaces) land here too. Its parts, each a constant fitted on real
logs (fitted/budget_constants.py names the records):

- the CUDA context's allocations outside torch and the cuBLAS handles (one value per accounting);
- TP > 1: NCCL, plus vLLM's custom all-reduce IPC buffers where the cards reach each other over
  NVLink / P2P (custom all-reduce is disabled on PCIe-only cards), per doubling of TP;
- gated-delta-net / KDA layers: their FLA Triton kernels' workspaces and autotuning;
- unified memory (GB10): the host's own share of the free-memory drop, and the pinned host
  buffers vLLM allocates (vision_profile.pinned_host_bytes), counted because vLLM reads the
  system's free memory there.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import log2

from hkv.planner.budget.budget_constants import SHIPPED, BudgetConstants

LINEAR_ATTENTION_VARIANTS = frozenset({"gdn", "kda"})


@dataclass(frozen=True)
class NonTorchSetup:
    """What decides the non-torch term of one rank."""

    tp: int
    consumed_accounting: bool  # vLLM 0.27+ prints "consumed memory"
    nvlink: bool  # the TP group's cards reach each other over NVLink / P2P (custom all-reduce on)
    linear_attention: bool
    unified_memory: bool = False
    pinned_host_bytes: int = 0  # pinned host memory a unified-memory GPU's free memory loses too

    def bytes(self, constants: BudgetConstants = SHIPPED) -> int:
        context = constants.consumed_context_bytes if self.consumed_accounting else constants.context_bytes
        per_doubling = (constants.comm_nvlink_bytes_per_tp_doubling if self.nvlink
                        else constants.comm_pcie_bytes_per_tp_doubling)
        comm = int(per_doubling * log2(self.tp)) if self.tp > 1 else 0
        kernels = constants.linear_attention_bytes if self.linear_attention else 0
        host = constants.unified_memory_bytes + self.pinned_host_bytes if self.unified_memory else 0
        return context + comm + kernels + host
