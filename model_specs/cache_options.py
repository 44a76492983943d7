"""How a model's caches are materialized on a rank: parallelism and cache dtypes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CacheOptions:
    """Options that turn a model's layer descriptions into per-rank cache specs.

    `conv_dtype_bytes` / `ssm_dtype_bytes` of None mean "the model's default" (the config's
    `mamba_ssm_cache_dtype` where present, else the KV dtype of the model weights).
    """

    tp: int = 1
    kv_dtype_bytes: int = 2
    conv_dtype_bytes: int | None = None
    ssm_dtype_bytes: int | None = None
    speculative_tokens: int = 0  # draft tokens per step: longer conv states, draft layers' caches

    def __post_init__(self) -> None:
        assert self.tp >= 1 and self.kv_dtype_bytes in (1, 2, 4) and self.speculative_tokens >= 0
