"""The options of a live run, torch-free so the CLI can read their defaults without importing torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from hkv.planner.budget.gpu_table import NO_GPU_MAX_NUM_BATCHED_TOKENS
from hkv.planner.plan_config import DEFAULT_MAX_NUM_SEQS
from hkv.runtime.errors import InvalidOptionError

DEFAULT_CPU_KV_MEMORY_BYTES = 256 * 2**20  # device cpu without kv_memory_bytes
RUN_LAYOUTS = ("hkv", "vllm", "partitioned")  # vllm-no-hybrid: a planning comparison only
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 0.0  # 0: greedy (argmax, ties to the lowest id, as transformers)
    top_p: float = 1.0  # nucleus: keep the most likely tokens whose mass reaches top_p
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise InvalidOptionError(f"temperature must be >= 0, got {self.temperature}",
                                     fields=("temperature",))
        if not 0 < self.top_p <= 1:
            raise InvalidOptionError(f"top_p must be in (0, 1], got {self.top_p}", fields=("top_p",))

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class RunConfig:
    max_new_tokens: int = 32
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    max_num_batched_tokens: int = NO_GPU_MAX_NUM_BATCHED_TOKENS  # token budget of a step (chunked prefill)
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    enable_prefix_caching: bool = True
    eos_token_ids: frozenset[int] = frozenset()
    record_logits: bool = False  # keep each sampled token's logits (tests)
    check_tables: bool = False  # compare the runner's block tables with the manager's every step, and check
    # the manager's invariants (check_integrity) when the run ends

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise InvalidOptionError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}",
                                     fields=("max_new_tokens",))
        for name in ("max_num_batched_tokens", "max_num_seqs"):
            if getattr(self, name) < 1:
                raise InvalidOptionError(f"{name} must be >= 1, got {getattr(self, name)}", fields=(name,))
