"""What a layout holds: the numbers `hkv plan` prints for each layout."""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.layout import Layout


@dataclass(frozen=True)
class Capacity:
    """Capacity of a layout for requests of `max_model_len` tokens.

    `max_concurrency` is vLLM's unrounded figure (null block counted, as vLLM prints it);
    `max_num_requests` is what an admission gate can actually grant at once (null excluded).
    `kv_cache_tokens` = int(max_concurrency x max_model_len), vLLM's "KV cache size".
    """

    max_model_len: int
    kv_cache_tokens: int
    max_concurrency: float
    max_num_requests: int
    blocks_per_request: int
    max_context_len: int  # longest request that fits alone
    concurrency: int
    max_context_len_at_concurrency: int  # longest length at which `concurrency` requests fit

    @classmethod
    def of(cls, layout: Layout, concurrency: int, upper_len: int) -> Capacity:
        seq_len = layout.max_model_len
        return cls(
            max_model_len=seq_len,
            kv_cache_tokens=layout.kv_cache_tokens(seq_len),
            max_concurrency=layout.max_concurrency(seq_len),
            max_num_requests=layout.max_num_requests(seq_len),
            blocks_per_request=sum(layout.blocks_per_request(seq_len)),
            max_context_len=layout.max_context_len(1, upper_len),
            concurrency=concurrency,
            max_context_len_at_concurrency=layout.max_context_len(concurrency, upper_len),
        )


def vllm_log_lines(layout: Layout, log_format: str, device: str = "GPU") -> tuple[str, ...]:
    """The capacity lines vLLM prints for this layout (current: one line; legacy <= v0.23: two)."""
    seq_len = layout.max_model_len
    conc = layout.max_concurrency(seq_len)
    if log_format == "legacy":
        num_blocks = layout.pools[0].num_blocks if layout.pools else 0
        min_block = min((g.block_size for g in layout.groups), default=0)
        tokens = num_blocks // max(1, len(layout.groups)) * min_block
        return (f"{device} KV cache size: {tokens:,} tokens",
                f"Maximum concurrency for {seq_len:,} tokens per request: {conc:.2f}x")
    tokens = layout.kv_cache_tokens(seq_len)
    return (f"{device} KV cache size: {tokens:,} tokens, "
            f"Maximum concurrency for {seq_len:,} tokens per request: {conc:.2f}x",)
