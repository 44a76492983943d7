"""What SGLang resolves and prints at start-up: its token pools and request caps."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class SglangPools:
    """SGLang's resolved pools for one rank.

    `available_bytes` is the profiled rest the pools are sized from; `max_total_num_tokens` is the
    full-attention pool ("max_total_num_tokens=", "KV Cache is allocated. #tokens"); `swa_tokens`
    the sliding-window pool of hybrid SWA models (else None); `max_mamba_cache_size` the recurrent
    state slots (else None)."""

    mem_fraction_static: float
    available_bytes: int
    max_total_num_tokens: int
    swa_tokens: int | None
    max_mamba_cache_size: int | None
    max_running_requests: int
    context_len: int
    page_size: int

    def to_json(self) -> dict[str, object]:
        """Exactly the keys of the oracle harness's JSON (the fields, in order)."""
        return asdict(self)
