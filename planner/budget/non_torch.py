"""The non-torch memory of one rank: what the GPU lost during start-up that torch did not allocate.

vLLM measures it (utils/mem_utils.memory_profiling) as the free-memory drop since the engine's
first snapshot minus torch's reserved memory; from 0.27 it prints "consumed memory (weights +
non-torch)", the whole free-memory drop, so persistent torch buffers (input buffers, the Triton
sampler's per-SM scratch, workspaces) land here too. Parts, fitted on real logs
(tests/planner/budget/test_profile_logged.py):

- the CUDA context's allocations outside torch and the cuBLAS handles: 0.13 GiB (0.11 H100 logs:
  0.13-0.14), 0.4 GiB with 0.27's accounting (0.26 A100, 0.56 RTX 4090);
- TP > 1: NCCL and the custom all-reduce buffers, 0.42 GiB x log2(TP) (0.11 TP2: 0.54-0.55,
  0.26 TP4: 0.95, TP8: 1.74 total);
- gated-delta-net / KDA layers (their FLA Triton kernels' workspaces and autotuning): 0.45 GiB on
  data-center GPUs (0.83 GiB on an H200 at 0.10.2, 0.08 GiB on H200 TP8 at 0.32), 3.9 GiB on
  consumer Blackwell, compute capability 12.x (3.68 GiB RTX 5090 at 0.18, 4.24 GiB GB10 at 0.27);
- unified memory (GB10): pinned host buffers, counted because vLLM reads the system's free memory
  there (vision_profile.pinned_host_bytes: inputs_embeds' host half, the dummy images' staging).
"""

from __future__ import annotations

from math import log2

GIB = 2**30
CONTEXT_BYTES = int(0.13 * GIB)
CONSUMED_CONTEXT_BYTES = int(0.4 * GIB)
COMM_BYTES_PER_TP_DOUBLING = int(0.42 * GIB)
LINEAR_ATTENTION_BYTES = int(0.45 * GIB)
LINEAR_ATTENTION_CONSUMER_BLACKWELL_BYTES = int(3.9 * GIB)
LINEAR_ATTENTION_VARIANTS = frozenset({"gdn", "kda"})


def non_torch_bytes(tp: int, *, consumed_accounting: bool, linear_attention: bool,
                    compute_capability: tuple[int, int] | None, pinned_host_bytes: int = 0) -> int:
    """The non-torch term; compute_capability None: a data-center GPU is assumed. `pinned_host_bytes`:
    pinned host memory, which a unified-memory GPU's free memory loses too (0 on a discrete GPU)."""
    context = CONSUMED_CONTEXT_BYTES if consumed_accounting else CONTEXT_BYTES
    comm = int(COMM_BYTES_PER_TP_DOUBLING * log2(tp)) if tp > 1 else 0
    kernels = 0
    if linear_attention:
        consumer_blackwell = compute_capability is not None and compute_capability[0] == 12
        kernels = LINEAR_ATTENTION_CONSUMER_BLACKWELL_BYTES if consumer_blackwell else LINEAR_ATTENTION_BYTES
    return context + comm + kernels + pinned_host_bytes
