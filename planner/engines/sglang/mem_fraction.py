"""SGLang 0.5.23's default mem_fraction_static (arg_groups/memory_hook.py handle_gpu_memory_settings).

The card's memory (nvidia-smi's memory.total, MiB) picks the chunked prefill size and the decode
CUDA graph batch; SGLang then reserves, in MiB,
    512 + max(chunked_prefill_size, 2048) x 1.5 + tp x pp / 8 x 1024
    + decode graph max batch x 2 + prefill graph capture (8 MiB per captured size, 1.5 GiB with MLA)
at least 10 GiB on cards over 60 GiB, and keeps mfs = round((gpu - reserved) / gpu, 3).
Multimodal models then scale it down by their vision tower's size (adjust_mem_fraction_for_vlm).
Left out: DP attention, DeepEP all-to-all, XPU and post-capture KV sizing (SGLANG_ENABLE_POST_CAPTURE_KV_SIZING,
off by default), the prefill-disaggregation roles.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.sglang.architectures import DSV4_ARCHITECTURES
from hkv.planner.engines.sglang.config_extras import SglangConfigExtras
from hkv.planner.engines.sglang.model_view import SglangModel, sglang_model
from hkv.planner.engines.sglang.server_args import SglangServerArgs

MIB = 2**20
GIB_IN_MIB = 1024
# (upper bound in MiB, chunked_prefill_size, decode max batch below TP 4, at TP >= 4)
_TIERS: tuple[tuple[float, int, int, int], ...] = (
    (20 * GIB_IN_MIB, 2048, 8, 8),  # T4, 4080
    (35 * GIB_IN_MIB, 4096, 48, 160),  # A10, 4090, 5090
    (60 * GIB_IN_MIB, 4096, 32, 160),  # A100 40GB, L40
    (90 * GIB_IN_MIB, 8192, 256, 512),  # H100, A100 80GB
    (160 * GIB_IN_MIB, 8192, 256, 512),  # H20, H200
    (float("inf"), 16384, 512, 512),  # B200, MI300
)
LARGE_TP = 4
RESERVE_BASE_MIB = 512
ACTIVATION_MIB_PER_TOKEN = 1.5
MIN_ACTIVATION_TOKENS = 2048
DEFAULT_MAX_PREFILL_TOKENS = 16384  # --max-prefill-tokens: the activation size without chunked prefill
PARALLEL_MIB_PER_RANK = 1024 / 8
DECODE_GRAPH_MIB_PER_BATCH = 2
PREFILL_GRAPH_MIB_PER_SIZE = 8
MLA_PREFILL_GRAPH_MIB = 1.5 * 1024
MLA_PREFILL_GRAPH_MAX_TOKENS = 8192
LARGE_CARD_MIB = 60 * GIB_IN_MIB
LARGE_CARD_MIN_RESERVE_MIB = 10 * GIB_IN_MIB
# adjust_mem_fraction_for_vlm: 0.95 for a ViT-L/14-sized tower, 10 % less per doubling, in [0.8, 1.05].
VLM_BASE_FACTOR = 0.95
VLM_SENSITIVITY = 0.1
VLM_FACTOR_MIN, VLM_FACTOR_MAX = 0.8, 1.05
BASELINE_VIT_COMPLEXITY = 24 * 1024**2


@dataclass(frozen=True)
class GpuDefaults:
    """What the card's memory sets before mem_fraction_static: the chunk and the graph batch."""

    chunked_prefill_size: int
    cuda_graph_max_bs: int


def gpu_defaults(gpu_memory_bytes: int, args: SglangServerArgs) -> GpuDefaults:
    """chunked_prefill_size and the decode CUDA graph max batch (the user's where given); a default
    graph batch above --max-running-requests comes down to it."""
    gpu_mib = gpu_memory_bytes / MIB
    _, chunk, small_tp_bs, large_tp_bs = next(tier for tier in _TIERS if gpu_mib < tier[0])
    max_bs = args.cuda_graph_max_bs
    if max_bs is None:
        max_bs = small_tp_bs if args.tp_size < LARGE_TP else large_tp_bs
        if args.max_running_requests is not None:
            max_bs = min(max_bs, args.max_running_requests)
    return GpuDefaults(args.chunked_prefill_size if args.chunked_prefill_size is not None else chunk, max_bs)


def prefill_graph_sizes(max_tokens: int) -> int:
    """How many token counts the breakable prefill graph captures up to `max_tokens`
    (cuda_graph_hook.py generate_prefill_cuda_graph_batch_sizes)."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
             *range(1280, 4097, 256), *range(4608, max_tokens + 1, 512)]
    return sum(1 for size in sizes if size <= max_tokens)


def _prefill_graph_captured(model: SglangModel, args: SglangServerArgs) -> bool:
    # apply_cuda_graph_compatibility turns the breakable prefill graph off for PP, KDA hybrids,
    # DeepSeek-V4 and multimodal models outside SGLang's allow-list.
    if args.pp_size > 1 or model.kda or model.architecture in DSV4_ARCHITECTURES:
        return False
    return not model.is_multimodal or model.multimodal_prefill_graph


def reserved_mib(gpu_memory_bytes: int, args: SglangServerArgs, model: SglangModel) -> float:
    """SGLang's reserve for activations and CUDA graphs, MiB."""
    defaults = gpu_defaults(gpu_memory_bytes, args)
    chunk = defaults.chunked_prefill_size
    activation_tokens = max(chunk, MIN_ACTIVATION_TOKENS) if chunk > 0 else max(DEFAULT_MAX_PREFILL_TOKENS, MIN_ACTIVATION_TOKENS)
    reserved = RESERVE_BASE_MIB + activation_tokens * ACTIVATION_MIB_PER_TOKEN
    reserved += args.tp_size * args.pp_size * PARALLEL_MIB_PER_RANK
    reserved += defaults.cuda_graph_max_bs * DECODE_GRAPH_MIB_PER_BATCH
    if _prefill_graph_captured(model, args):
        if model.is_mla:
            reserved += MLA_PREFILL_GRAPH_MIB
        else:
            max_tokens = chunk if args.max_total_tokens is None else min(chunk, args.max_total_tokens)
            reserved += prefill_graph_sizes(max_tokens) * PREFILL_GRAPH_MIB_PER_SIZE
    if gpu_memory_bytes / MIB > LARGE_CARD_MIB:
        reserved = max(reserved, LARGE_CARD_MIN_RESERVE_MIB)
    return reserved


def default_mem_fraction_static(gpu_memory_bytes: int, args: SglangServerArgs, spec: ModelSpec,
                                extras: SglangConfigExtras | None = None) -> float:
    """SGLang 0.5.23's mem_fraction_static when --mem-fraction-static is not given.

    `gpu_memory_bytes`: the card's total as SGLang reads it (nvidia-smi memory.total x 1 MiB)."""
    model = sglang_model(spec, extras, disable_hybrid_swa_memory=args.disable_hybrid_swa_memory)
    return model_mem_fraction_static(gpu_memory_bytes, args, model)


def model_mem_fraction_static(gpu_memory_bytes: int, args: SglangServerArgs, model: SglangModel) -> float:
    """`default_mem_fraction_static` for a model already in SGLang's view."""
    gpu_mib = gpu_memory_bytes / MIB
    fraction = round((gpu_mib - reserved_mib(gpu_memory_bytes, args, model)) / gpu_mib, 3)
    if model.is_multimodal and model.vision_tower is not None:
        fraction *= _vlm_factor(*model.vision_tower)
    return fraction


def _vlm_factor(vit_layers: int, vit_hidden_size: int) -> float:
    complexity = vit_layers * vit_hidden_size**2 / BASELINE_VIT_COMPLEXITY
    adjustment = max(VLM_FACTOR_MIN, min(VLM_FACTOR_MAX, 1.0 - VLM_SENSITIVITY * (complexity - 1.0)))
    return VLM_BASE_FACTOR * adjustment
