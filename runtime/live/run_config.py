"""The options of a live run, torch-free so the CLI can read their defaults without importing torch."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_CPU_KV_MEMORY_BYTES = 256 * 2**20  # --device cpu without --kv-memory
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9  # --device cuda: share of free memory for weights + KV


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 0.0  # 0: greedy (argmax, ties to the lowest id, as transformers)
    top_p: float = 1.0  # nucleus: keep the most likely tokens whose mass reaches top_p
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise ValueError(f"--temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"--top-p must be in (0, 1], got {self.top_p}")

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class RunConfig:
    max_new_tokens: int = 32
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    max_num_batched_tokens: int = 2048  # token budget of one step (chunked prefill beyond it)
    max_num_seqs: int = 256
    enable_prefix_caching: bool = True
    eos_token_ids: frozenset[int] = frozenset()
    record_logits: bool = False  # keep each sampled token's logits (tests)
    check_tables: bool = False  # compare the runner's block tables with the manager's every step

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"--max-new-tokens must be >= 1, got {self.max_new_tokens}")
        if self.max_num_batched_tokens < 1 or self.max_num_seqs < 1:
            raise ValueError(f"max_num_batched_tokens and max_num_seqs must be >= 1 in {self}")
