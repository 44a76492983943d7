"""Every option of a plan, in one frozen config; each default lives here and only here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from hkv.model_specs.cache_options import CacheOptions
from hkv.planner.auto_dtype import auto_dtype_bytes
from hkv.planner.budget.budget_constants import SHIPPED, BudgetConstants
from hkv.planner.engines.vllm.rules import LOG_FORMAT_VERSIONS, VllmRules
from hkv.planner.errors import InvalidInputError

LAYOUT_NAMES = ("hkv", "vllm", "vllm-no-hybrid", "partitioned")
KV_CACHE_DTYPES = ("auto", "fp8")
VLLM_LOG_FORMATS = tuple(LOG_FORMAT_VERSIONS)  # --vllm-version shorthands: current 0.33.0, legacy 0.20.0
EXPECTED_AVG_ENV = "EXPECTED_AVERAGE_SEQ_LENGTH"
ALLOW_LONG_ENV = "HKV_ALLOW_LONG_MAX_MODEL_LEN"  # "1": max_model_len may exceed the model's positions

# Defaults shared with the runtime (SchedulerConfig, RunConfig); vLLM's values.
DEFAULT_GPU = "h100"
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9  # hkv run's CUDA default; plans take the vLLM release's (vllm_rules)
DEFAULT_BLOCK_SIZE = 16  # vLLM's CacheConfig default; plans take the attention backend's (attention_backend.py)
DEFAULT_MAX_NUM_SEQS = 256  # vLLM's below 70 GiB (and hkv run's); plans take the GPU class's (gpu_table)
# hkv's own scheduler: the most prompt tokens one request gets in a step (the step's budget may
# still be filled by several requests). It is the `hkv` layout's in-flight allowance T: a sliding
# or chunked layer holds at most its window (chunk) plus this many tokens. 2,048 tokens keep that
# transient small next to full attention at 8k (vLLM's T is 2 x 8,192 on an H100) while a chunk of
# that size is still compute-bound on current GPUs.
DEFAULT_HKV_PREFILL_CHUNK_LEN = 2048

DTYPE_BYTES = {"auto": None, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
                "float32": 4, "fp32": 4, "float": 4, "fp8": 1, "float8": 1}


@dataclass(frozen=True)
class PlanConfig:
    gpu: str | None = DEFAULT_GPU
    gpu_memory_bytes: int | None = None  # overrides the GPU table's total
    gpu_memory_utilization: float | None = None  # None: the vLLM release's default (0.92 from 0.20.0)
    available_kv_memory_bytes: int | None = None  # exact KV budget per rank (vLLM kv_cache_memory_bytes)
    tp: int = 1
    pp: int = 1
    dtype: str = "auto"  # weights
    kv_cache_dtype: Literal["auto", "fp8"] = "auto"
    mamba_ssm_dtype: str = "auto"
    block_size: int | None = None  # None: the attention backend's default (planner/attention_backend.py)
    cpu_engine: bool = False  # vLLM's CPU platform runs the plan (hkv verify on a CPU build): CPU backends
    max_model_len: int | None = None  # None: the model's own
    allow_long_max_model_len: bool = False  # max_model_len beyond the model's positions (ALLOW_LONG_ENV)
    max_num_batched_tokens: int | None = None  # None: vLLM's default for the GPU class
    max_num_seqs: int | None = None  # None: vLLM's default for the GPU class (1,024 on >= 70 GiB but A100)
    output_len: int | None = None  # sustained figure: output tokens of a max-length request; None: len // 8
    hkv_prefill_chunk_len: int = DEFAULT_HKV_PREFILL_CHUNK_LEN  # `hkv` layout: prompt tokens per request per step
    speculative_tokens: int = 0  # draft tokens per step (vLLM num_speculative_tokens); MTP layers join
    draft_layers: int | None = None  # EAGLE: full-attention draft layers, in place of the config's MTP layers
    vllm_version: str | None = None  # the release the vllm layouts follow; None: vllm_log's, else the newest
    vllm_log: Literal["current", "legacy"] | None = None  # shorthand: current 0.33.0 (newest), legacy 0.20.0
    expected_avg_seq_len: int | None = None  # partitioned split; None: env var, else max_model_len
    concurrency: int = 1
    enable_prefix_caching: bool | None = None  # None: vLLM's default for the model and release
    primary_layout: str = "hkv"
    enforce_eager: bool = False  # vLLM --enforce-eager: no CUDA graphs, so no graph estimate
    quantization: str | None = None  # vLLM --quantization; None: the checkpoint's quantization_config
    weights_bytes: int | None = None  # weight bytes per rank as vLLM loads them, when the user knows them
    language_model_only: bool = False  # vLLM --language-model-only / mm limits all 0: towers not loaded
    # FlashInfer beside vLLM (the vllm/vllm-openai images ship it; pip's wheel requires it from
    # 0.11.1); up to 0.11.0 it decides the profile's sampler. None: not known.
    flashinfer_installed: bool | None = None
    # The blind budget's fitted constants (fitted/budget_constants.py): the shipped fit, or a re-fit
    # (the blind-budget benchmark's leave-one-source-out) or a user's calibration applied to it.
    budget_constants: BudgetConstants = SHIPPED

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "concurrency", "hkv_prefill_chunk_len"):
            _positive(name, getattr(self, name))
        if self.speculative_tokens < 0:
            raise InvalidInputError(f"speculative_tokens must be >= 0, got {self.speculative_tokens}",
                                    fields=("speculative_tokens",))
        if self.draft_layers is not None and (self.draft_layers < 1 or not self.speculative_tokens):
            raise InvalidInputError(
                f"draft_layers must be a positive count and needs speculative_tokens > 0, got draft_layers "
                f"{self.draft_layers} with speculative_tokens {self.speculative_tokens}",
                fields=("draft_layers", "speculative_tokens"))
        for name in ("block_size", "max_model_len", "max_num_batched_tokens", "max_num_seqs", "expected_avg_seq_len",
                     "output_len"):
            if getattr(self, name) is not None:
                _positive(name, getattr(self, name))
        if self.weights_bytes is not None:
            _positive("weights_bytes", self.weights_bytes)
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise InvalidInputError(
                f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}",
                fields=("gpu_memory_utilization",))
        if self.vllm_log is not None and self.vllm_log not in VLLM_LOG_FORMATS:
            raise InvalidInputError(f"vllm_log must be current or legacy, got {self.vllm_log!r}",
                                    fields=("vllm_log",))
        if self.vllm_log is not None and self.vllm_version is not None:
            raise InvalidInputError("vllm_log is a shorthand for a vllm_version; pass one of them, not both",
                                    fields=("vllm_log", "vllm_version"))
        self.vllm_rules()  # raises InvalidInputError for a release hkv does not model
        if self.kv_cache_dtype not in KV_CACHE_DTYPES:
            raise InvalidInputError(f"kv_cache_dtype must be auto or fp8, got {self.kv_cache_dtype!r}",
                                    fields=("kv_cache_dtype",))
        if self.primary_layout not in LAYOUT_NAMES:
            raise InvalidInputError(
                f"primary_layout must be one of {', '.join(LAYOUT_NAMES)}, got {self.primary_layout!r}",
                fields=("primary_layout",))
        dtype_bytes("dtype", self.dtype)
        dtype_bytes("mamba_ssm_dtype", self.mamba_ssm_dtype)

    def utilization(self) -> float:
        """The gpu_memory_utilization in force: the given one, else the vLLM release's default."""
        if self.gpu_memory_utilization is not None:
            return self.gpu_memory_utilization
        return self.vllm_rules().default_gpu_memory_utilization

    def vllm_rules(self) -> VllmRules:
        """The accounting rules of the vLLM release the vllm layouts follow."""
        if self.vllm_version is not None:
            return VllmRules.for_version(self.vllm_version)
        return VllmRules.for_version(LOG_FORMAT_VERSIONS[self.vllm_log or "current"])

    def weight_dtype_bytes(self, model_dtype_bytes: int) -> int:
        """Element size of the weights (and activations, and an auto KV cache): --dtype, else vLLM's
        auto on this plan's platform for a config of `model_dtype_bytes` (auto_dtype.py)."""
        given = dtype_bytes("dtype", self.dtype)
        return given if given is not None else auto_dtype_bytes(model_dtype_bytes, self.gpu, self.cpu_engine)

    def cache_options(self, model_dtype_bytes: int) -> CacheOptions:
        weights = self.weight_dtype_bytes(model_dtype_bytes)
        kv = 1 if self.kv_cache_dtype == "fp8" else weights
        ssm = dtype_bytes("mamba_ssm_dtype", self.mamba_ssm_dtype)
        # conv states follow the model dtype: the family's default unless --dtype or auto's cast changed it
        conv = None if self.dtype == "auto" and weights == model_dtype_bytes else weights
        return CacheOptions(tp=self.tp, kv_dtype_bytes=kv, conv_dtype_bytes=conv, ssm_dtype_bytes=ssm,
                            speculative_tokens=self.speculative_tokens)


def dtype_bytes(field: str, name: str) -> int | None:
    """Element size of a dtype name; None for "auto". InvalidInputError names the field."""
    key = name.strip().lower()
    if key not in DTYPE_BYTES:
        raise InvalidInputError(
            f"{field} must be one of auto, bfloat16, float16, float32, fp8; got {name!r}", fields=(field,))
    return DTYPE_BYTES[key]


def _positive(field: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInputError(f"{field} must be a positive integer, got {value!r}", fields=(field,))


def parse_positive_int(text: str, *, name: str) -> int:
    """A strict positive integer from text ("12"); "abc", "0", "-3", "1.5", "" raise naming `name`."""
    stripped = text.strip()
    if not stripped.isdigit() or int(stripped) <= 0:
        raise InvalidInputError(f"{name} must be a positive integer (tokens), got {text!r}")
    return int(stripped)


def expected_avg_seq_len_from_env(environ: dict[str, str] | None = None) -> int | None:
    """EXPECTED_AVERAGE_SEQ_LENGTH if set (validated), else None."""
    env = os.environ if environ is None else environ
    if EXPECTED_AVG_ENV not in env:
        return None
    return parse_positive_int(env[EXPECTED_AVG_ENV], name=EXPECTED_AVG_ENV)


def allow_long_max_model_len_from_env(environ: dict[str, str] | None = None) -> bool:
    """True when HKV_ALLOW_LONG_MAX_MODEL_LEN is 1 (like vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN)."""
    env = os.environ if environ is None else environ
    return env.get(ALLOW_LONG_ENV, "").strip().lower() in ("1", "true")
