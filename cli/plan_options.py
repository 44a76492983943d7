"""Plan options shared by `plan` and `simulate`: Annotated aliases, and PlanOptions, the typed
record of what was given, which builds the PlanConfig.

Defaults live in PlanConfig (help texts read them from there); an option not given is None and
leaves the PlanConfig default in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import Enum
from typing import Annotated, Any, TypeVar

import typer
from hkv.cli.choices import Dtype, Emit, KvCacheDtype, PlanLayout, VllmLog
from hkv.cli.errors import flag_of
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.budget.memory_budget import MemoryBudget
from hkv.planner.engines.vllm.rules import (
    DEFAULT_VLLM_VERSION,
    LOG_FORMAT_VERSIONS,
    NEWEST_MODELED,
    OLDEST_MODELED,
    format_version,
)
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan_config import (
    ALLOW_LONG_ENV,
    EXPECTED_AVG_ENV,
    PlanConfig,
    allow_long_max_model_len_from_env,
    expected_avg_seq_len_from_env,
    parse_positive_int,
)
from hkv.planner.sizes import format_gib, parse_size

DEFAULTS = PlanConfig()
T = TypeVar("T")

GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help=f"GPU name (see `hkv gpus`) [default: {DEFAULTS.gpu}, said on stderr / in JSON when "
                  "assumed]")]
GpuMemoryOpt = Annotated[str | None, typer.Option(
    "--gpu-memory", help="GPU memory SIZE instead of --gpu, e.g. 80GiB [default: none, the --gpu's total]")]
UtilOpt = Annotated[float | None, typer.Option(
    "--gpu-memory-utilization",
    help="share of GPU memory for vLLM [default: the --vllm-version release's: 0.92 from 0.20.0, 0.9 before]")]
AvailableOpt = Annotated[str | None, typer.Option(
    "--available-kv-memory", help="exact KV cache budget per GPU (SIZE), like vLLM's kv_cache_memory_bytes "
                                    "[default: none, estimated from the GPU]")]
TpOpt = Annotated[int | None, typer.Option("--tp", help=f"tensor parallel size [default: {DEFAULTS.tp}]")]
PpOpt = Annotated[int | None, typer.Option("--pp", help=f"pipeline parallel size [default: {DEFAULTS.pp}]")]
DtypeOpt = Annotated[Dtype | None, typer.Option(  # type: ignore[valid-type]
    "--dtype", case_sensitive=False, help=f"weight dtype [default: {DEFAULTS.dtype}]")]
KvDtypeOpt = Annotated[KvCacheDtype | None, typer.Option(  # type: ignore[valid-type]
    "--kv-cache-dtype", help=f"KV cache dtype [default: {DEFAULTS.kv_cache_dtype}]")]
SsmDtypeOpt = Annotated[Dtype | None, typer.Option(  # type: ignore[valid-type]
    "--mamba-ssm-dtype", case_sensitive=False, help="recurrent state dtype [default: auto = config]")]
BlockSizeOpt = Annotated[int | None, typer.Option(
    "--block-size", help="tokens per block [default: the attention backend's, as vLLM picks it: 16 for "
    "FlashAttention, 64 for FlashMLA (MLA, fp8 KV, Hopper), 32 for FlashInfer MLA (Blackwell), ...]")]
MaxLenOpt = Annotated[int | None, typer.Option(
    "--max-model-len", help=f"request length to plan for, at most the model's positions unless "
                            f"{ALLOW_LONG_ENV}=1 [default: the model's]")]
MnbtOpt = Annotated[int | None, typer.Option(
    "--max-num-batched-tokens", help="token budget per step [default: vLLM's for the GPU class]")]
MaxSeqsOpt = Annotated[int | None, typer.Option(
    "--max-num-seqs", help="max running requests [default: vLLM's for the GPU: 1024 on >= 70 GiB cards but A100, else 256]")]
OutputLenOpt = Annotated[int | None, typer.Option(
    "--output-len", help="output tokens of the max-length requests of the sustained figure "
                         "[default: max model len // 8; the rest is prompt]")]
ChunkOpt = Annotated[int | None, typer.Option(
    "--hkv-prefill-chunk-len", help="hkv layout: most prompt tokens one request gets per step; its "
                                f"in-flight allowance T [default: {DEFAULTS.hkv_prefill_chunk_len:,}]")]
SpecTokensOpt = Annotated[int | None, typer.Option(
    "--speculative-tokens", help="draft tokens per step (vLLM num_speculative_tokens); the config's MTP "
                                 "layers then join the KV cache groups [default: 0]")]
DraftLayersOpt = Annotated[int | None, typer.Option(
    "--draft-layers", help="EAGLE: full-attention draft layers (shaped like the model's own) that join the KV "
                           "cache groups under --speculative-tokens, in place of the config's MTP layers "
                           "[default: none, the config's MTP layers]")]
VllmLogOpt = Annotated[VllmLog | None, typer.Option(  # type: ignore[valid-type]
    "--vllm-log", help=f"shorthand for --vllm-version: current = {LOG_FORMAT_VERSIONS['current']}, legacy = "
                       f"{LOG_FORMAT_VERSIONS['legacy']} (the last release whose log counts KV cache tokens from blocks; "
                       "two-line logs last until 0.27) [default: none, see --vllm-version]")]
VllmVersionOpt = Annotated[str | None, typer.Option(
    "--vllm-version", help=f"the vLLM release whose KV cache accounting the vllm layouts follow "
                           f"({format_version(OLDEST_MODELED)} to {format_version(NEWEST_MODELED)}) "
                           f"[default: {DEFAULT_VLLM_VERSION}]")]
AvgLenOpt = Annotated[str | None, typer.Option(
    "--expected-avg-seq-len",
    help=f"split of separate pools, tokens [env: {EXPECTED_AVG_ENV}; default: max model len]")]
ConcurrencyOpt = Annotated[int | None, typer.Option(
    "--concurrency", help=f"also report the max context length at this many concurrent requests "
                          f"[default: {DEFAULTS.concurrency}]")]
NoPrefixOpt = Annotated[bool, typer.Option(
    "--no-prefix-caching", help="plan with prefix caching off (Mamba 'none' mode) [default: vLLM's default for "
                                "the model and release: on, but off for pure state-space models and, before "
                                "0.26, for hybrids]")]
PrefixOpt = Annotated[bool, typer.Option(
    "--enable-prefix-caching", help="plan with prefix caching on (Mamba 'align' mode), as vLLM's flag of the "
                                    "same name does where the release's default is off "
                                    "[default: see --no-prefix-caching]")]
EagerOpt = Annotated[bool, typer.Option(
    "--enforce-eager", help="plan for vLLM's --enforce-eager: no CUDA graphs, so no graph estimate comes out of "
                            "the budget [default: off, graphs captured]")]
QuantOpt = Annotated[str | None, typer.Option(
    "--quantization", help="vLLM's --quantization: fp8 or bitsandbytes quantize an unquantized checkpoint at "
                           "load [default: the checkpoint's quantization_config]")]
WeightsOpt = Annotated[str | None, typer.Option(
    "--weights-memory", help="weights per GPU as vLLM loads them (SIZE, e.g. 17.66GiB: vLLM's 'Model loading "
                             "took'), in place of hkv's estimate [default: from the checkpoint or config]")]
TextOnlyOpt = Annotated[bool, typer.Option(
    "--language-model-only", help="vLLM's --language-model-only (or --limit-mm-per-prompt all 0): vision/audio "
                                  "towers are not loaded [default: off, a multimodal checkpoint's towers load]")]
FlashInferOpt = Annotated[bool | None, typer.Option(
    "--flashinfer/--no-flashinfer",
    help="whether FlashInfer is installed beside vLLM (the vllm/vllm-openai images ship it; pip's vllm requires "
         "it from 0.11.1). Up to 0.11.0 vLLM then samples its profile batch with FlashInfer (14 B per logit) "
         "instead of sorting the vocabulary (38 B) [default: not known: the sort, the band reaching FlashInfer's "
         "figure]")]
LayoutOpt = Annotated[PlanLayout | None, typer.Option(  # type: ignore[valid-type]
    "--layout", help=f"primary layout [default: {DEFAULTS.primary_layout}]")]
EmitOpt = Annotated[Emit | None, typer.Option(  # type: ignore[valid-type]
    "--emit", help="print the `vllm serve` command (env vars, flags) that realizes the vllm layout, or with "
                   "sglang the `python3 -m sglang.launch_server` command that realizes the SGLang plan, instead "
                   "of the tables (JSON: the plan plus a \"serve\" object); needs one --gpu and one --tp "
                   "[default: none, the plan]")]


@dataclass(frozen=True)
class PlanOptions:
    """The plan options as given on the command line: None (False) = not given."""

    gpu: str | None = None
    gpu_memory: str | None = None  # SIZE
    gpu_memory_utilization: float | None = None
    available_kv_memory: str | None = None  # SIZE
    tp: int | None = None
    pp: int | None = None
    dtype: Enum | None = None
    kv_cache_dtype: Enum | None = None
    mamba_ssm_dtype: Enum | None = None
    block_size: int | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    output_len: int | None = None
    hkv_prefill_chunk_len: int | None = None
    speculative_tokens: int | None = None
    draft_layers: int | None = None
    vllm_log: Enum | None = None
    vllm_version: str | None = None
    expected_avg_seq_len: str | None = None  # tokens, as typed (the env var's rules)
    concurrency: int | None = None
    no_prefix_caching: bool = False
    enable_prefix_caching: bool = False
    layout: Enum | None = None
    enforce_eager: bool = False
    quantization: str | None = None
    weights_memory: str | None = None  # SIZE
    language_model_only: bool = False
    flashinfer: bool | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, Any], **overrides: Any) -> PlanOptions:
        """The options among a command's parameters (its `locals()` on entry: every parameter
        named as a field here is a plan option), then `overrides` (a command that fixes one, or
        whose parameter of that name means something else, passes it here)."""
        given = {f.name: args[f.name] for f in fields(cls) if f.name in args}
        return cls(**{**given, **overrides})

    def plan_config(self) -> PlanConfig:
        """The PlanConfig; InvalidInputError for values PlanConfig or the parsers refuse."""
        d = DEFAULTS
        return PlanConfig(
            gpu=_given(self.gpu, d.gpu),
            gpu_memory_bytes=None if self.gpu_memory is None else parse_size(
                self.gpu_memory, option=flag_of("gpu_memory_bytes")),
            gpu_memory_utilization=_given(self.gpu_memory_utilization, d.gpu_memory_utilization),
            available_kv_memory_bytes=None if self.available_kv_memory is None else parse_size(
                self.available_kv_memory, option=flag_of("available_kv_memory_bytes")),
            tp=_given(self.tp, d.tp), pp=_given(self.pp, d.pp),
            dtype=_given(_value(self.dtype), d.dtype),
            kv_cache_dtype=_given(_value(self.kv_cache_dtype), d.kv_cache_dtype),
            mamba_ssm_dtype=_given(_value(self.mamba_ssm_dtype), d.mamba_ssm_dtype),
            block_size=_given(self.block_size, d.block_size),
            max_model_len=self.max_model_len, allow_long_max_model_len=allow_long_max_model_len_from_env(),
            max_num_batched_tokens=self.max_num_batched_tokens,
            max_num_seqs=_given(self.max_num_seqs, d.max_num_seqs),
            output_len=self.output_len,
            hkv_prefill_chunk_len=_given(self.hkv_prefill_chunk_len, d.hkv_prefill_chunk_len),
            speculative_tokens=_given(self.speculative_tokens, d.speculative_tokens),
            draft_layers=self.draft_layers,
            vllm_log=_value(self.vllm_log), vllm_version=self.vllm_version,
            expected_avg_seq_len=expected_avg_seq_len_from_env() if self.expected_avg_seq_len is None
            else parse_positive_int(self.expected_avg_seq_len, name=flag_of("expected_avg_seq_len")),
            concurrency=_given(self.concurrency, d.concurrency),
            enable_prefix_caching=self._prefix_caching(),
            primary_layout=_given(_value(self.layout), d.primary_layout),
            enforce_eager=self.enforce_eager, quantization=self.quantization,
            weights_bytes=None if self.weights_memory is None else parse_size(
                self.weights_memory, option=flag_of("weights_bytes")),
            language_model_only=self.language_model_only, flashinfer_installed=self.flashinfer,
        )

    def _prefix_caching(self) -> bool | None:
        if self.no_prefix_caching and self.enable_prefix_caching:
            raise InvalidInputError("--enable-prefix-caching and --no-prefix-caching contradict each other; "
                                    "pass one of them", fields=("enable_prefix_caching",))
        return True if self.enable_prefix_caching else False if self.no_prefix_caching else None

    def assumed(self, budget: MemoryBudget) -> dict[str, Any]:
        """Defaults the user did not choose that shaped the plan: the GPU, when neither --gpu nor
        --gpu-memory was given (with an exact KV budget it still sets max_num_batched_tokens)."""
        if self.gpu is not None or self.gpu_memory is not None or DEFAULTS.gpu is None:
            return {}
        if self.available_kv_memory is not None and self.max_num_batched_tokens is not None:
            return {}
        return {"gpu": DEFAULTS.gpu, "gpu_total_bytes": get_gpu(DEFAULTS.gpu).total_bytes,
                "max_num_batched_tokens": budget.max_num_batched_tokens}


def assumed_note(assumed: dict[str, Any]) -> str | None:
    """The stderr line for PlanOptions.assumed (human output), None when nothing was assumed."""
    if not assumed:
        return None
    return (f"no --gpu given: planned for {assumed['gpu']} ({format_gib(assumed['gpu_total_bytes'])}, "
            f"max_num_batched_tokens {assumed['max_num_batched_tokens']:,}); pass --gpu NAME or "
            "--gpu-memory SIZE to choose")


def _given(value: T | None, default: T) -> T:
    return default if value is None else value


def _value(choice: Enum | None) -> Any:
    return None if choice is None else choice.value
