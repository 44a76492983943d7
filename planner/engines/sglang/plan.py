"""SGLang's plan for one model on one GPU: its budget (default mem_fraction_static, the profiled
rest), its pools and max_running_requests, and the start-up lines it would print."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.gpu_table import MIB, get_gpu
from hkv.planner.budget.weights import weights_term
from hkv.planner.engines.sglang.budget import VLM_CACHE_MIB, SglangBudget, baseline_overhead_bytes
from hkv.planner.engines.sglang.concurrency import max_length_requests
from hkv.planner.engines.sglang.config_extras import SglangConfigExtras
from hkv.planner.engines.sglang.mem_fraction import gpu_defaults, model_mem_fraction_static
from hkv.planner.engines.sglang.model_view import sglang_model
from hkv.planner.engines.sglang.pool_resolution import HOPPER, SglangResolution, resolve
from hkv.planner.engines.sglang.pools import SglangPools
from hkv.planner.engines.sglang.rules import for_sglang_version
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.engines.sglang.startup_lines import start_up_lines
from hkv.planner.errors import DoesNotFitError, InvalidInputError
from hkv.planner.plan_config import DEFAULT_GPU, PlanConfig
from hkv.planner.sizes import format_gib


@dataclass(frozen=True)
class SglangPlan:
    """One rank's SGLang plan. `notes`: one line per assumption hkv made."""

    args: SglangServerArgs
    gpu: str  # the GPU table's name, or "custom" for a given memory size
    gpu_memory_bytes: int  # the card as SGLang reads it (nvidia-smi memory.total)
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    budget: SglangBudget
    resolution: SglangResolution
    notes: tuple[str, ...]

    @property
    def pools(self) -> SglangPools:
        return self.resolution.pools

    @property
    def max_length_requests(self) -> int:
        """Requests of context_len tokens that run at once (concurrency.py; an estimate)."""
        return max_length_requests(self.pools, self.resolution.model.sliding_window)

    def start_up_lines(self) -> tuple[str, ...]:
        return start_up_lines(self.resolution, self.chunked_prefill_size)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.resolution.rules.version_text, "gpu": self.gpu,
            "gpu_memory_bytes": self.gpu_memory_bytes,
            "free_before_load_bytes": self.budget.free_before_load_bytes,
            "weights_bytes": self.budget.weights.bytes,
            "chunked_prefill_size": self.chunked_prefill_size, "cuda_graph_max_bs": self.cuda_graph_max_bs,
            "pools": self.pools.to_json(),
            "slots_per_request": self.resolution.mamba.slots_per_request if self.resolution.mamba else None,
            "capped_by_mamba": self.resolution.running.capped_by_mamba,
            "max_length_requests": self.max_length_requests,
            "start_up_lines": list(self.start_up_lines()), "notes": list(self.notes),
        }


def plan_sglang(spec: ModelSpec, args: SglangServerArgs, *, gpu: str | None = DEFAULT_GPU,
                gpu_memory_bytes: int | None = None, extras: SglangConfigExtras | None = None,
                free_before_load_bytes: int | None = None, weights_bytes: int | None = None) -> SglangPlan:
    """SGLang's plan on `gpu` (a GPU table name) or a card of `gpu_memory_bytes`.

    `free_before_load_bytes` / `weights_bytes`: what SGLang's baseline and loader measured, where
    known (a start-up log prints both); otherwise hkv estimates them. `extras`: config.json values the
    spec does not keep; read from `spec.hf_config` when not given. Raises InvalidInputError for a
    model SGLang does not serve and DoesNotFitError when SGLang would refuse to start."""
    if extras is None and spec.hf_config is not None:  # the config the spec was read from
        extras = SglangConfigExtras.from_hf_config(spec.hf_config)
    rules = for_sglang_version(args.version)
    model = sglang_model(spec, extras, disable_hybrid_swa_memory=args.disable_hybrid_swa_memory)
    card = get_gpu(gpu) if gpu is not None and gpu_memory_bytes is None else None
    smi_bytes = gpu_memory_bytes if card is None else _smi_bytes(card.nvml_mib, card.total_bytes)
    if smi_bytes is None:
        raise InvalidInputError("plan_sglang needs a GPU name or its memory size", fields=("gpu",))
    cuda_total = smi_bytes if card is None else card.total_bytes
    capability = card.compute_capability if card is not None and card.compute_capability else HOPPER
    notes: list[str] = []
    defaults = gpu_defaults(smi_bytes, args)
    mfs = args.mem_fraction_static
    if mfs is None:
        if not rules.default_mem_fraction_modeled:
            raise InvalidInputError(
                f"SGLang {args.version}'s default mem_fraction_static is not modeled (hkv reproduces 0.5.23's); "
                f"pass --mem-fraction-static", fields=("mem_fraction_static", "sglang_version"))
        mfs = model_mem_fraction_static(smi_bytes, args, model)
    cfg = PlanConfig(gpu=gpu if card is not None else None, gpu_memory_bytes=None if card is not None else smi_bytes,
                     tp=args.tp_size, pp=args.pp_size, weights_bytes=weights_bytes)
    weights = weights_term(spec, cfg)
    if weights.source != "given":
        notes.append(f"weights: hkv's estimate of the loaded weights ({weights.note}), as vLLM loads them")
    if free_before_load_bytes is None:
        free_before_load_bytes = cuda_total - baseline_overhead_bytes(args.tp_size)
        notes.append(f"free memory before loading: the card's {format_gib(cuda_total)} less an estimated "
                     f"{format_gib(baseline_overhead_bytes(args.tp_size))} CUDA context"
                     + (" and NCCL buffers" if args.tp_size > 1 else ""))
    reservation = VLM_CACHE_MIB if model.is_multimodal and rules.multimodal_reservation else 0
    budget = SglangBudget(free_before_load_bytes, weights, mfs, reservation, args.tp_size * args.pp_size)
    if budget.available_bytes <= 0:
        raise DoesNotFitError(
            f"SGLang: the weights ({format_gib(weights.bytes)} a rank) leave no memory for the KV cache at "
            f"mem_fraction_static {mfs}; it needs at least {budget.minimum_mem_fraction_static:.3f}, or more GPUs",
            fields=("mem_fraction_static", "tp"))
    resolution = resolve(spec, args, budget.available_bytes, mfs, extras=extras, compute_capability=capability,
                         chunked_prefill_size=defaults.chunked_prefill_size)
    if resolution.running.capped_by_mamba and resolution.mamba is not None:
        notes.append(f"max_running_requests is capped to {resolution.pools.max_running_requests} by the state pool "
                     f"({resolution.mamba.slots} slots, {resolution.mamba.slots_per_request} per request)")
    return SglangPlan(args, card.name if card is not None else "custom", smi_bytes, defaults.chunked_prefill_size,
                      defaults.cuda_graph_max_bs, budget, resolution, tuple(notes))


def _smi_bytes(nvml_mib: int | None, cuda_total_bytes: int) -> int:
    # SGLang reads nvidia-smi's memory.total; a card without one in the table: the CUDA total.
    return nvml_mib * MIB if nvml_mib is not None else cuda_total_bytes
