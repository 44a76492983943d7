"""Everything `hkv run` checks and builds before the first step, in the order that keeps a bad
input from costing a model load: directory and config, tokenizer, prompts, KV budget, plan,
and only then the weights and the ModelRunner.

KV memory: `kv_memory_bytes` when given; else on CPU DEFAULT_CPU_KV_MEMORY_BYTES (256 MiB); on
CUDA the free device memory (torch.cuda.mem_get_info, before the weights load) x
gpu_memory_utilization minus the checkpoint's weight bytes. On CPU the weights plus the KV cache
must fit the machine's available memory (checked before anything is allocated). The plan is made
for exactly that budget (PlanConfig.available_kv_memory_bytes), so its Layout is what gets allocated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from hkv.model_specs.cache_spec import CacheRole, StateCacheSpec
from hkv.model_specs.compressed_attention import CompressedCacheDesc
from hkv.model_specs.errors import InputError
from hkv.model_specs.layer_desc import AttentionDesc, RecurrentDesc
from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.errors import DoesNotFitError
from hkv.planner.plan import Plan, plan
from hkv.planner.plan_config import (
    DEFAULT_BLOCK_SIZE,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_MAX_NUM_SEQS,
    PlanConfig,
)
from hkv.planner.sizes import format_bytes
from hkv.runtime.errors import InvalidOptionError
from hkv.runtime.live.hf_loader import (
    check_model_dir,
    eos_token_ids,
    load_causal_lm,
    load_config,
    load_tokenizer,
    model_dtype,
)
from hkv.runtime.live.host_memory import available_host_memory_bytes
from hkv.runtime.live.model_runner import ModelRunner
from hkv.runtime.live.paged_kv_cache import state_dtype_preference
from hkv.runtime.live.prompt_file import Prompt
from hkv.runtime.live.run_config import DEFAULT_CPU_KV_MEMORY_BYTES

# Recurrent variants whose transformers mixers hkv run drives (runtime/live/recurrent_hook.py).
RUN_STATE_VARIANTS = frozenset({"mamba1", "mamba2", "gdn", "kda", "lightning", "short_conv"})
_SSM_DTYPE_KEYS = ("mamba_ssm_cache_dtype", "mamba_ssm_dtype")  # as model_specs/state_dtypes.py reads
_TORCH_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "float": torch.float32,
                 "bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16,
                 "fp16": torch.float16, "half": torch.float16}
_DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


class UnsupportedModelError(InputError):
    """The model loads but `hkv run` cannot run it yet (recurrent hybrids, MLA, ...)."""


class PromptError(InputError):
    """A prompt cannot run: text without a tokenizer, unknown token ids, too long."""


@dataclass(frozen=True)
class RunOptions:
    device: str = "cpu"
    layout: str = "hkv"
    kv_memory_bytes: int | None = None  # None: the device's default (module docstring)
    gpu_memory_utilization: float | None = None  # CUDA only; None: DEFAULT_GPU_MEMORY_UTILIZATION
    max_model_len: int | None = None  # None: the model's
    allow_long_max_model_len: bool = False  # max_model_len beyond the model's positions
    block_size: int = DEFAULT_BLOCK_SIZE
    max_num_batched_tokens: int | None = None  # None: the planner's default
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    mamba_ssm_dtype: str = "auto"  # recurrent state dtype; auto: the config's (PlanConfig's rule)


@dataclass(frozen=True)
class ModelFiles:
    """A model directory read up to, but not including, its weights."""

    path: Path
    spec: ModelSpec
    config: Any  # transformers config
    tokenizer: Any | None
    eos_token_ids: frozenset[int]
    dtype: torch.dtype
    kv_shared_with: dict[int, int]  # Gemma 3n: shared layer -> the layer whose pages it reads


def open_model(model_dir: str) -> ModelFiles:
    """Config, spec, tokenizer and EOS ids of a model directory; raises ModelLoadError,
    ModelSpecError or UnsupportedModelError."""
    path = check_model_dir(model_dir)
    spec = load_model_spec(str(path))
    attention = [layer for layer in spec.cache_layers if isinstance(layer, AttentionDesc)]
    missing = _missing_pieces(spec, attention)
    if missing:
        raise UnsupportedModelError(f"{model_dir}: hkv run cannot run {spec.model_type} yet: {'; '.join(missing)}")
    config = load_config(path)
    dtype = model_dtype(config)
    if dtype not in _DTYPE_NAMES:
        raise UnsupportedModelError(f"{model_dir}: weights in {dtype}; hkv run supports float32, bfloat16, "
                                    "float16")
    shared = {layer.layer_idx: layer.kv_shared_with for layer in attention
              if layer.kv_shared_with is not None}
    return ModelFiles(path, spec, config, load_tokenizer(path), eos_token_ids(path, config), dtype, shared)


def _missing_pieces(spec: ModelSpec, attention: Sequence[AttentionDesc]) -> list[str]:
    """What hkv run lacks for this model, one phrase per piece (empty: it runs)."""
    missing = []
    if any(not layer.is_mla and layer.head_dim != layer.head_dim_v for layer in attention):
        missing.append("its attention has unequal K/V head sizes, and the paged attention path stores K and V "
                       "of one head size (or an MLA latent)")
    if any(layer.role is CacheRole.INDEXER for layer in attention):
        missing.append("its sparse attention keeps an index-key cache of its own (DeepSeek Sparse Attention's "
                       "lightning indexer, MiniMax-M3's index keys), which hkv run does not bind; it attends over "
                       "whole K/V or MLA latent pages only")
    if any(isinstance(layer, CompressedCacheDesc) for layer in attention):
        missing.append("its compressed attention (DeepSeek-V4: a sliding window, 4:1 and 128:1 compressed "
                       "latents with their compressor states) has no binding; hkv run pages uncompressed K/V "
                       "or MLA latents only")
    recurrent = {layer.variant for layer in spec.cache_layers if isinstance(layer, RecurrentDesc)}
    unrun = sorted(recurrent - RUN_STATE_VARIANTS)
    if unrun:
        missing.append(f"its {', '.join(unrun)} layers have no state binding (it runs "
                       f"{', '.join(sorted(RUN_STATE_VARIANTS))})")
    if not attention:
        missing.append("it has no attention layers (it runs hybrids and attention-only models)")
    return missing


def encode_prompts(model: ModelFiles, prompts: Sequence[Prompt]) -> list[list[int]]:
    """Token ids of every prompt (text through the tokenizer, special tokens added)."""
    vocab_size = model.spec.vocab_size
    encoded = []
    for i, prompt in enumerate(prompts, 1):
        if prompt.token_ids is not None:
            ids = list(prompt.token_ids)
            bad = [t for t in ids if t >= vocab_size]
            if bad:
                raise PromptError(f"prompt {i}: token id {bad[0]} is outside the vocabulary "
                                  f"(size {vocab_size})")
        elif model.tokenizer is None:
            raise PromptError(f"prompt {i} is text but {model.path} has no tokenizer; give \"token_ids\" "
                              "in a JSONL prompt file instead")
        else:
            ids = list(model.tokenizer(prompt.text)["input_ids"])
            if not ids:
                raise PromptError(f"prompt {i}: the tokenizer turned it into no tokens")
        encoded.append(ids)
    return encoded


def kv_memory_budget(model: ModelFiles, options: RunOptions) -> int:
    """KV bytes for the run (module docstring). InvalidOptionError for contradicting options,
    DoesNotFitError when the device cannot hold the weights and that much KV memory."""
    if options.kv_memory_bytes is not None and options.gpu_memory_utilization is not None:
        raise InvalidOptionError("give kv_memory_bytes or gpu_memory_utilization, not both",
                                 fields=("kv_memory_bytes", "gpu_memory_utilization"))
    if options.device == "cpu":
        if options.gpu_memory_utilization is not None:
            raise InvalidOptionError("gpu_memory_utilization needs device cuda; on CPU give kv_memory_bytes",
                                     fields=("gpu_memory_utilization", "device", "kv_memory_bytes"))
        kv_bytes = options.kv_memory_bytes or DEFAULT_CPU_KV_MEMORY_BYTES
        check_host_memory(model, kv_bytes)
        return kv_bytes
    if options.kv_memory_bytes is not None:
        return options.kv_memory_bytes
    utilization = options.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    if not 0 < utilization <= 1:
        raise InvalidOptionError(f"gpu_memory_utilization must be in (0, 1], got {utilization}",
                                 fields=("gpu_memory_utilization",))
    free, _total = torch.cuda.mem_get_info()
    budget = int(free * utilization) - model.spec.weights_bytes
    if budget <= 0:
        raise DoesNotFitError(
            f"{model.path} does not fit: {format_bytes(model.spec.weights_bytes)} of weights exceed "
            f"{format_bytes(free)} free x {utilization:g} on the GPU; raise gpu_memory_utilization",
            fields=("gpu_memory_utilization",))
    return budget


def check_host_memory(model: ModelFiles, kv_bytes: int) -> None:
    """DoesNotFitError when the weights plus `kv_bytes` exceed the machine's available memory."""
    available = available_host_memory_bytes()
    weights = model.spec.weights_bytes
    if weights + kv_bytes > available:
        raise DoesNotFitError(
            f"{format_bytes(kv_bytes)} of KV cache plus {format_bytes(weights)} of weights exceed the "
            f"{format_bytes(available)} of memory this machine has available; lower kv_memory_bytes",
            fields=("kv_memory_bytes",))


def check_device(device: str) -> torch.device:
    if device not in ("cpu", "cuda"):
        raise InvalidOptionError(f"device must be cpu or cuda, got {device!r}", fields=("device",))
    if device == "cuda" and not torch.cuda.is_available():
        raise InvalidOptionError("device cuda: no CUDA device is visible", fields=("device",))
    return torch.device(device)


def plan_run(model: ModelFiles, options: RunOptions, kv_bytes: int) -> Plan:
    """The plan for exactly `kv_bytes` of KV memory, in the model's dtype."""
    return plan(model.spec, PlanConfig(
        gpu=None, available_kv_memory_bytes=kv_bytes, primary_layout=options.layout,
        dtype=_DTYPE_NAMES[model.dtype], max_model_len=options.max_model_len,
        allow_long_max_model_len=options.allow_long_max_model_len, block_size=options.block_size,
        max_num_batched_tokens=options.max_num_batched_tokens, max_num_seqs=options.max_num_seqs,
        mamba_ssm_dtype=options.mamba_ssm_dtype))


def check_prompts_fit(prompts: Sequence[Sequence[int]], the_plan: Plan, max_new_tokens: int) -> None:
    """Every prompt leaves room for one output token within max_model_len, and one request of
    prompt + max_new_tokens fits the KV cache alone. PromptError otherwise."""
    layout = the_plan.primary.layout
    max_len = layout.max_model_len
    for i, ids in enumerate(prompts, 1):
        if len(ids) >= max_len:
            raise PromptError(f"prompt {i} has {len(ids):,} tokens; the model accepts at most "
                              f"{max_len - 1:,} "
                              f"(max_model_len {max_len:,} includes one output token)")
        seq_len = min(len(ids) + max_new_tokens, max_len)
        if layout.max_num_requests(seq_len) < 1:
            raise PromptError(f"prompt {i}: one request of {seq_len:,} tokens does not fit the KV cache "
                              f"({layout.name} layout, {the_plan.budget.available_bytes:,} bytes); "
                              "raise kv_memory_bytes or lower max_new_tokens",
                              fields=("kv_memory_bytes", "max_new_tokens"))


def state_dtypes(model: ModelFiles, mamba_ssm_dtype: str) -> tuple[torch.dtype, ...]:
    """The dtypes recurrent state tensors are kept in, most preferred first: the run's
    --mamba-ssm-dtype, the config's SSM dtype; PagedKVCache then tries the model's and float32,
    taking the first whose size is the one the plan counted."""
    text = model.config.get_text_config()
    names = [mamba_ssm_dtype, *(str(getattr(text, key, None) or "auto") for key in _SSM_DTYPE_KEYS)]
    return tuple(_TORCH_DTYPES[name] for name in names if name in _TORCH_DTYPES)


def check_state_dtypes(model: ModelFiles, the_plan: Plan, mamba_ssm_dtype: str) -> None:
    """InvalidOptionError, before any weight loads, when a recurrent state tensor of the plan has
    an element size no dtype hkv run keeps states in has (fp8: PagedKVCache would refuse it)."""
    preferred = state_dtype_preference(state_dtypes(model, mamba_ssm_dtype), model.dtype)
    sizes = {torch.empty((), dtype=d).element_size() for d in preferred}
    for group in the_plan.primary.layout.groups:
        if isinstance(group.spec, StateCacheSpec) and not set(group.spec.dtype_bytes) <= sizes:
            raise InvalidOptionError(
                f"mamba_ssm_dtype {mamba_ssm_dtype}: the plan keeps {group.layer_names[0]}'s state in "
                f"{min(group.spec.dtype_bytes)}-byte elements; hkv run keeps recurrent states in float32, "
                "bfloat16 or float16", fields=("mamba_ssm_dtype",))


def load_runner(model: ModelFiles, the_plan: Plan, device: torch.device,
                mamba_ssm_dtype: str = "auto") -> ModelRunner:
    """Load the weights on `device` and bind them to freshly allocated pools of the plan's layout."""
    lm = load_causal_lm(model.path, model.config, model.dtype, device)
    return ModelRunner(lm, the_plan.primary.layout, model.kv_shared_with, state_dtypes(model, mamba_ssm_dtype))
