"""The SGLang server arguments that change how it sizes its memory pools."""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.sglang.default_release import DEFAULT_SGLANG_VERSION
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8  # what SGLang uses when --swa-full-tokens-ratio is not given (DeepSeek-V4: 0.1)


@dataclass(frozen=True)
class SglangServerArgs:
    """`sglang serve` / `launch_server` arguments that change sizing, with SGLang 0.5.23's defaults.

    None means "SGLang chooses": the model's length for `context_length`, a GPU-memory tier for
    `chunked_prefill_size`, `cuda_graph_max_bs` and `mem_fraction_static`, the model's page size for
    `page_size`, the pool-derived cap for `max_running_requests` and `max_mamba_cache_size`, the
    model's ratio for `swa_full_tokens_ratio` (0.8; DeepSeek-V4 0.1). `version` is the SGLang release to follow
    (`--sglang-version`); `rules.for_sglang_version` says what changed between releases."""

    tp_size: int = 1
    pp_size: int = 1
    context_length: int | None = None
    chunked_prefill_size: int | None = None
    cuda_graph_max_bs: int | None = None
    mem_fraction_static: float | None = None
    page_size: int | None = None  # None: SGLang's default (1 on CUDA; 64 for DSA models; MiniMax-M3 128 on sm90/sm100; DeepSeek-V4 256)
    swa_full_tokens_ratio: float | None = None  # None: SGLang's default for the model (see above)
    mamba_full_memory_ratio: float = 0.9
    max_running_requests: int | None = None
    max_mamba_cache_size: int | None = None
    disable_radix_cache: bool = False
    kv_cache_dtype: str = "auto"
    speculative_algorithm: str | None = None
    speculative_num_draft_tokens: int | None = None
    version: str = DEFAULT_SGLANG_VERSION
    # Fields beyond the shared contract (same SGLang defaults).
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    max_total_tokens: int | None = None
    disable_hybrid_swa_memory: bool = False
    mamba_ssm_dtype: str | None = None  # None: the model config's, else float32
    dtype: str = "auto"

    @property
    def swa_ratio_or_default(self) -> float:
        """The sliding pool's ratio SGLang's generic hybrid-SWA split uses."""
        return DEFAULT_SWA_FULL_TOKENS_RATIO if self.swa_full_tokens_ratio is None else self.swa_full_tokens_ratio
