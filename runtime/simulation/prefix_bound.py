"""The infinite-cache bound of a workload's prefix hits: what a cache that never evicts would hit.

For each request in arrival order, its prompt is cut into blocks of `block_size` tokens, each
named by a chain key (the previous block's key and this block's tokens, so equal keys mean equal
prefixes); the hit is the run of leading full blocks some earlier request already had (its prompt
or its output: a conversation's next turn resends both), at most (prompt_len - 1) // block_size
blocks, since the last prompt token is always computed (vLLM's rule). The bound is hit tokens /
prompt tokens; a replay's first-admission hit rate can only reach it with unlimited memory.

Cost: one pass, O(tokens / block_size) dictionary work, memory O(distinct blocks) (keys are
Python ints from hash(): stable within one process only, which is all this needs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hkv.runtime.simulation.workload_request import WorkloadRequest

_INT64_BYTES = 8


@dataclass(frozen=True)
class PrefixBound:
    block_size: int  # tokens per block the bound is counted in
    num_prompt_tokens: int
    num_hit_tokens: int

    @property
    def hit_rate(self) -> float:
        return self.num_hit_tokens / self.num_prompt_tokens if self.num_prompt_tokens else 0.0


def prefix_bound(workload: Iterable[WorkloadRequest], block_size: int) -> PrefixBound:
    """The bound over `workload` (any iterable of requests in arrival order) at `block_size`."""
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    seen: set[int] = set()
    step = block_size * _INT64_BYTES
    prompt_tokens = hit_tokens = 0
    for wr in workload:
        prompt = wr.prompt_token_ids.tobytes()
        max_hit_blocks = (wr.prompt_len - 1) // block_size
        keys = _chain(prompt + wr.output_token_ids.tobytes(), step)
        num_hit = 0
        while num_hit < max_hit_blocks and keys[num_hit] in seen:
            num_hit += 1
        prompt_tokens += wr.prompt_len
        hit_tokens += num_hit * block_size
        seen.update(keys)
    return PrefixBound(block_size, prompt_tokens, hit_tokens)


def _chain(token_bytes: bytes, step: int) -> list[int]:
    """Chain keys of the full blocks of `token_bytes` (int64 tokens, `step` bytes per block)."""
    keys = []
    key = 0
    for offset in range(0, len(token_bytes) - step + 1, step):
        key = hash((key, token_bytes[offset:offset + step]))
        keys.append(key)
    return keys
