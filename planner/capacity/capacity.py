"""What a layout holds: the numbers `hkv plan` prints for each layout."""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.vllm.rules import CURRENT_LOG_FORMAT, LogFormat
from hkv.planner.layout import Layout
from hkv.planner.capacity.sustained import SustainedSetup, predict_sustained, split_request


@dataclass(frozen=True)
class Capacity:
    """Capacity of a layout for requests of `max_model_len` tokens.

    `max_concurrency` is vLLM's unrounded figure (null block counted, as vLLM prints it), the
    *logged* concurrency (`logged_concurrency` carries the same number under its issue-10 name);
    `physical_limit_concurrency` = pool bytes / ideal bytes per request (Layout);
    `sustained_concurrency`: max-length requests that run at once without a preemption under
    vLLM 0.32's admission (slots for the whole prompt), predicted by sustained.py (requests of
    `sustained_output_len` output tokens, the rest prompt);
    `max_num_requests` is what an admission gate can actually grant at once (null excluded).
    `kv_cache_tokens` is the number vLLM's "KV cache size" line prints in `log_format`
    (see `kv_cache_tokens`).
    """

    max_model_len: int
    kv_cache_tokens: int
    max_concurrency: float
    max_num_requests: int
    blocks_per_request: int
    max_context_len: int  # longest request that fits alone
    concurrency: int
    max_context_len_at_concurrency: int  # longest length at which `concurrency` requests fit
    logged_concurrency: float = 0.0  # == max_concurrency
    physical_limit_concurrency: float = 0.0
    sustained_concurrency: int = 0
    sustained_output_len: int = 0

    @classmethod
    def of(cls, layout: Layout, concurrency: int, upper_len: int, setup: SustainedSetup,
           log_format: LogFormat = CURRENT_LOG_FORMAT, sustained_bounds: tuple[int, int] | None = None) -> Capacity:
        """Raises ValueError when setup.output_len leaves no prompt (see split_request).
        `sustained_bounds`: (floor, cap) known for the sustained figure (predict_sustained)."""
        seq_len = layout.max_model_len
        _, output_len = split_request(seq_len, setup.output_len)
        return cls(
            max_model_len=seq_len,
            kv_cache_tokens=kv_cache_tokens(layout, log_format),
            max_concurrency=layout.max_concurrency(seq_len),
            max_num_requests=layout.max_num_requests(seq_len),
            blocks_per_request=sum(layout.blocks_per_request(seq_len)),
            max_context_len=layout.max_context_len(1, upper_len),
            concurrency=concurrency,
            max_context_len_at_concurrency=layout.max_context_len(concurrency, upper_len),
            logged_concurrency=layout.max_concurrency(seq_len),
            physical_limit_concurrency=layout.physical_limit_concurrency(seq_len),
            sustained_concurrency=predict_sustained(layout, setup, sustained_bounds),
            sustained_output_len=output_len,
        )


def kv_cache_tokens(layout: Layout, log_format: LogFormat) -> int:
    """vLLM's "KV cache size" tokens: int(concurrency x max_model_len) from vLLM 0.20.1; before,
    num_blocks // number of groups x the smallest block size (first pool)."""
    if not log_format.tokens_from_concurrency:
        num_blocks = layout.pools[0].num_blocks if layout.pools else 0
        min_block = min((g.block_size for g in layout.groups), default=0)
        return num_blocks // max(1, len(layout.groups)) * min_block
    return layout.kv_cache_tokens(layout.max_model_len)


def vllm_log_lines(layout: Layout, log_format: LogFormat, device: str = "GPU") -> tuple[str, ...]:
    """The capacity lines vLLM prints for this layout (one line from vLLM 0.28, two before)."""
    seq_len = layout.max_model_len
    conc = layout.max_concurrency(seq_len)
    tokens = kv_cache_tokens(layout, log_format)
    if not log_format.one_line:
        return (f"{device} KV cache size: {tokens:,} tokens",
                f"Maximum concurrency for {seq_len:,} tokens per request: {conc:.2f}x")
    return (f"{device} KV cache size: {tokens:,} tokens, "
            f"Maximum concurrency for {seq_len:,} tokens per request: {conc:.2f}x",)
