"""SGLang's recurrent-state pool: how many state slots it allocates out of the profiled rest, and
what it leaves for the KV pool (kv_cache_configurator.py _handle_max_mamba_cache).

Without --max-mamba-cache-size the pool takes mamba_full_memory_ratio / (1 + ratio) of the rest
(0.9 / 1.9 by default): K = (budget - slot) // slot slots from 0.5.17 (the pool's padding slot is
charged, K + 1 slots come out of the rest), K = budget // slot before. With speculative decoding
each running request also keeps one intermediate state per draft token, solved jointly:
K = (budget - slot (1 + D)) // (slot (1 + D / slots_per_request)). The arithmetic is in GiB
floats, as SGLang's.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.budget.gpu_table import GIB
from hkv.planner.engines.sglang.mamba_state import MambaState
from hkv.planner.engines.sglang.rules import SglangRules
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.errors import DoesNotFitError, InvalidInputError


@dataclass(frozen=True)
class MambaPool:
    """`slots` state slots (SGLang's max_mamba_cache_size) and the rest left for the KV pool."""

    slots: int
    slots_per_request: int
    state: MambaState
    intermediate_bytes: int  # speculative decoding's per-draft-token states, 0 without
    rest_gib: float  # what the KV pool is sized from

    @property
    def running_cap(self) -> int:
        """max_running_requests can be at most slots // slots per request."""
        return self.slots // self.slots_per_request


def mamba_pool(state: MambaState, args: SglangServerArgs, rules: SglangRules, rest_gib: float,
               slots_per_request: int) -> MambaPool:
    """The state pool carved out of `rest_gib` (GiB), as SGLang's `_handle_max_mamba_cache`."""
    per_slot = state.slot_bytes
    draft_tokens = args.speculative_num_draft_tokens if args.speculative_algorithm is not None else None
    if args.speculative_algorithm is not None and draft_tokens is None:
        raise InvalidInputError("speculative_algorithm needs speculative_num_draft_tokens",
                                fields=("speculative_num_draft_tokens",))
    padding = 1 if rules.mamba_padding_slot else 0
    if args.max_mamba_cache_size is not None:
        slots = args.max_mamba_cache_size
    elif args.disable_radix_cache and args.max_running_requests is not None:
        slots = max(1, args.max_running_requests)
    else:
        budget_bytes = rest_gib * args.mamba_full_memory_ratio / (1 + args.mamba_full_memory_ratio) * GIB
        if draft_tokens is not None:
            slots = int((budget_bytes - per_slot * (1 + draft_tokens))
                        // (per_slot * (1 + draft_tokens / slots_per_request)))
        elif padding:
            slots = int((budget_bytes - per_slot) // per_slot)
        else:
            slots = int(budget_bytes // per_slot)
    intermediate = 0
    if draft_tokens is not None:
        assert args.max_running_requests is not None
        requests = min(max(1, args.max_running_requests), slots // slots_per_request)
        intermediate = per_slot * (requests + padding) * draft_tokens
    if slots <= 0:
        raise DoesNotFitError(
            f"SGLang's recurrent-state pool gets no slot: {per_slot / 2**20:.2f} MiB per request state out of "
            f"{rest_gib:.2f} GiB (mamba_full_memory_ratio {args.mamba_full_memory_ratio}); raise "
            f"--mem-fraction-static or use more GPUs", fields=("mem_fraction_static", "tp"))
    rest = rest_gib - intermediate / GIB - (slots + padding) * per_slot / GIB
    return MambaPool(slots, slots_per_request, state, intermediate, rest)
