"""GPU memory table: what CUDA (or ROCm) reports as total device memory.

Totals are the CUDA-visible figure where it is known (vLLM logs it as total_gpu_memory);
otherwise the NVML total minus 0.5 GiB, the gap observed on Hopper. Sources:
shared/reference/peers.md section 4 (nvidia-smi strings, vLLM logs, vendor datasheets).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from hkv.planner.errors import InvalidInputError

GIB = 2**30
MIB = 2**20
_NVML_TO_CUDA_GAP_BYTES = GIB // 2


@dataclass(frozen=True)
class Gpu:
    name: str  # the --gpu key
    description: str
    nvml_mib: int | None  # nvidia-smi memory.total; None where unknown
    cuda_total_bytes: int | None  # measured CUDA/ROCm total; None where unknown
    hbm_bandwidth_gbps: int
    verified: bool = True
    compute_capability: tuple[int, int] | None = None  # CUDA (major, minor); None for ROCm

    @property
    def total_bytes(self) -> int:
        if self.cuda_total_bytes is not None:
            return self.cuda_total_bytes
        assert self.nvml_mib is not None
        return self.nvml_mib * MIB - _NVML_TO_CUDA_GAP_BYTES

    @property
    def total_source(self) -> str:
        return "measured CUDA total" if self.cuda_total_bytes is not None else "NVML total - 0.5 GiB"

    @property
    def is_a100(self) -> bool:
        return self.name.startswith("a100")


def _gib(value: float) -> int:
    return int(value * GIB)


GPUS: tuple[Gpu, ...] = (
    Gpu("h100", "NVIDIA H100 SXM5 80GB", 81559, _gib(79.11), 3350, compute_capability=(9, 0)),
    Gpu("h100-pcie", "NVIDIA H100 PCIe 80GB", 81559, None, 2000, compute_capability=(9, 0)),
    Gpu("h100-nvl", "NVIDIA H100 NVL 94GB", 95830, None, 3900, verified=False, compute_capability=(9, 0)),
    Gpu("h200", "NVIDIA H200 SXM 141GB", 143771, _gib(139.81), 4800, compute_capability=(9, 0)),
    Gpu("b200", "NVIDIA B200 180GB", 183359, None, 8000, compute_capability=(10, 0)),
    Gpu("gb200", "NVIDIA GB200 (per GPU) 186GB", 189471, None, 8000, compute_capability=(10, 0)),
    Gpu("a100-40gb", "NVIDIA A100 SXM4 40GB", 40960, None, 1555, compute_capability=(8, 0)),
    Gpu("a100-80gb", "NVIDIA A100 SXM4 80GB", 81920, int(79.249755859375 * GIB), 2039, compute_capability=(8, 0)),
    Gpu("l40s", "NVIDIA L40S 48GB (ECC on)", 46068, None, 864, compute_capability=(8, 9)),
    Gpu("l4", "NVIDIA L4 24GB", 23034, None, 300, compute_capability=(8, 9)),
    Gpu("a10g", "NVIDIA A10G 24GB (AWS g5)", 23028, None, 600, compute_capability=(8, 6)),
    Gpu("rtx4090", "NVIDIA GeForce RTX 4090 24GB", 24564, None, 1008, compute_capability=(8, 9)),
    Gpu("rtx5090", "NVIDIA GeForce RTX 5090 32GB", 32607, None, 1792, compute_capability=(12, 0)),
    Gpu("mi300x", "AMD Instinct MI300X 192GB", None, 205_822_885_888, 5300),
    Gpu("mi325x", "AMD Instinct MI325X 256GB", None, 256 * GIB, 6000, verified=False),
    Gpu("mi355x", "AMD Instinct MI355X 288GB", None, 309_220_868_096, 8000),
)
_BY_NAME = {gpu.name: gpu for gpu in GPUS}
_ALIASES = {"h100-sxm": "h100", "h200-sxm": "h200", "a100": "a100-80gb", "a100-40g": "a100-40gb",
            "a100-80g": "a100-80gb", "4090": "rtx4090", "5090": "rtx5090"}


def get_gpu(name: str) -> Gpu:
    """The GPU named `name` (case-insensitive); InvalidInputError lists close names otherwise."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key in _BY_NAME:
        return _BY_NAME[key]
    close = difflib.get_close_matches(key, list(_BY_NAME) + list(_ALIASES), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise InvalidInputError(
        f"unknown GPU {name!r}{hint} (known: {', '.join(_BY_NAME)}; or give gpu_memory_bytes instead)",
        fields=("gpu_memory_bytes",))


def default_max_num_batched_tokens(total_bytes: int, is_a100: bool) -> int:
    """vLLM's `vllm serve` default (EngineArgs.get_batch_defaults): by device memory class."""
    if total_bytes >= 160 * GIB:
        return 16384
    if total_bytes >= 70 * GIB and not is_a100:
        return 8192
    return 2048


# Planning without a GPU (`hkv run` on CPU, or an exact KV budget and gpu=None).
NO_GPU_MAX_NUM_BATCHED_TOKENS = default_max_num_batched_tokens(0, is_a100=False)
