"""GPU memory table: what CUDA (or ROCm) reports as total device memory.

Totals are "measured" where a real vLLM start-up log printed the device's total (the record id in
`measured_in`: shared/data/vllm_memory_logs/records.jsonl, q ids records_2026_11.jsonl); otherwise
"derived": the NVML total (nvidia-smi memory.total) minus 0.5 GiB, the gap observed on Hopper. Other sources:
shared/reference/peers.md section 4 (nvidia-smi strings, vLLM logs, vendor datasheets).

Unified-memory devices (DGX Spark's GB10, GH200's Grace side): CUDA reports the system memory as
the device total (119.63 GiB of a 128 GB Spark) and vLLM takes free memory from the OS
(psutil's available, vllm/utils/mem_utils.py MemorySnapshot.measure), so the host's own use
comes out of the same pool: `requested` must still fit what the OS has free.
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
    unified_memory: bool = False  # CPU and GPU share one memory (vLLM: is_integrated_gpu)
    measured_in: str = ""  # the start-up log whose printed total cuda_total_bytes is
    # The cards of a TP group reach each other over NVLink / xGMI (SXM / OAM boards, NVL bridges), so
    # vLLM's custom all-reduce runs; PCIe-only cards (L40S, L4, GeForce, RTX PRO) run NCCL alone.
    nvlink: bool = False

    @property
    def total_bytes(self) -> int:
        if self.cuda_total_bytes is not None:
            return self.cuda_total_bytes
        assert self.nvml_mib is not None
        return self.nvml_mib * MIB - _NVML_TO_CUDA_GAP_BYTES

    @property
    def total_source(self) -> str:
        if self.cuda_total_bytes is None:
            return "derived: NVML total - 0.5 GiB"
        return f"measured: {self.measured_in}" if self.measured_in else "measured CUDA total"

    @property
    def is_a100(self) -> bool:
        return self.name.startswith("a100")

    def small_batch_tier(self, gb10_small_tier: bool) -> bool:
        """Whether vLLM's batch defaults skip the >= 70 GiB tier for this card whatever its memory:
        the A100 (by name) in every release, the GB10 (compute capability 12.1) from 0.33
        (`gb10_small_tier`, engine/arg_utils.py get_batch_defaults)."""
        return self.is_a100 or (gb10_small_tier and self.compute_capability == (12, 1))

    @property
    def dense_bf16_tflops(self) -> float | None:
        """Dense BF16 tensor throughput (spec sheet); None where the table has no figure."""
        return _DENSE_BF16_TFLOPS.get(self.name)


def _gib(value: float) -> int:
    return int(value * GIB)


GPUS: tuple[Gpu, ...] = (
    Gpu("h100", "NVIDIA H100 SXM5 80GB", 81559, _gib(79.18), 3350, compute_capability=(9, 0),
        measured_in="vLLM 0.11 logs (llm-d r018-r026); 79.11 in older logs", nvlink=True),
    Gpu("h100-pcie", "NVIDIA H100 PCIe 80GB", 81559, None, 2000, compute_capability=(9, 0)),
    Gpu("h100-nvl", "NVIDIA H100 NVL 94GB", 95830, None, 3900, verified=False, compute_capability=(9, 0), nvlink=True),
    Gpu("h200", "NVIDIA H200 SXM 141GB", 143771, _gib(139.81), 4800, compute_capability=(9, 0),
        measured_in="r010, r043", nvlink=True),
    Gpu("b200", "NVIDIA B200 180GB", 183359, _gib(178.36), 8000, compute_capability=(10, 0),
        measured_in="r048 (a B200-class card, 178.36 GiB)", nvlink=True),
    Gpu("gb200", "NVIDIA GB200 (per GPU) 186GB", 189471, _gib(184.31), 8000, compute_capability=(10, 0),
        measured_in="r009 (GB200/GB300-class, 184.31 GiB)", nvlink=True),
    Gpu("a100-40gb", "NVIDIA A100 SXM4 40GB", 40960, None, 1555, compute_capability=(8, 0), nvlink=True),
    Gpu("a100-80gb", "NVIDIA A100 SXM4 80GB", 81920, int(79.249755859375 * GIB), 2039, compute_capability=(8, 0),
        measured_in="r008", nvlink=True),
    Gpu("l40s", "NVIDIA L40S 48GB (ECC on)", 46068, _gib(44.42), 864, compute_capability=(8, 9),
        measured_in="q001 (vLLM 0.10.2: 'Free memory on device (43.93/44.42 GiB)')"),
    Gpu("l4", "NVIDIA L4 24GB", 23034, None, 300, compute_capability=(8, 9)),
    Gpu("a10g", "NVIDIA A10G 24GB (AWS g5)", 23028, None, 600, compute_capability=(8, 6)),
    Gpu("a10", "NVIDIA A10 24GB", 23028, None, 600, compute_capability=(8, 6)),
    Gpu("a40", "NVIDIA A40 48GB (ECC on)", 46068, None, 696, compute_capability=(8, 6)),
    Gpu("rtx-a6000", "NVIDIA RTX A6000 48GB", 49140, None, 768, compute_capability=(8, 6)),
    Gpu("rtx3090", "NVIDIA GeForce RTX 3090 24GB", 24576, None, 936, compute_capability=(8, 6)),
    Gpu("rtx4080", "NVIDIA GeForce RTX 4080 16GB", 16376, _gib(15.99), 717, compute_capability=(8, 9),
        measured_in="q004 (WSL2; 15.99 GiB total in the author's transcription of vLLM's breakdown)"),
    Gpu("rtx4090", "NVIDIA GeForce RTX 4090 24GB", 24564, None, 1008, compute_capability=(8, 9)),
    Gpu("rtx5090", "NVIDIA GeForce RTX 5090 32GB", 32607, _gib(31.36), 1792, compute_capability=(12, 0),
        measured_in="r035 printed 31.4 (rounded); 31.36 lies within it"),
    Gpu("rtx-pro-4500", "NVIDIA RTX PRO 4500 Blackwell 32GB", 32623, _gib(31.38), 896,
        compute_capability=(12, 0), measured_in="r049"),
    Gpu("rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell 96GB", 97887, _gib(94.97), 1792,
        compute_capability=(12, 0), measured_in="r044-r046"),
    Gpu("gb10", "NVIDIA GB10 (DGX Spark) 128GB unified", None, _gib(119.63), 273, compute_capability=(12, 1),
        unified_memory=True, measured_in="r016 (system memory as CUDA reports it)"),
    Gpu("t4", "NVIDIA Tesla T4 16GB", 15360, _gib(14.56), 320, compute_capability=(7, 5), measured_in="r051"),
    Gpu("mi300x", "AMD Instinct MI300X 192GB", None, 205_822_885_888, 5300, nvlink=True),
    Gpu("mi325x", "AMD Instinct MI325X 256GB", None, 256 * GIB, 6000, verified=False, nvlink=True),
    Gpu("mi355x", "AMD Instinct MI355X 288GB", None, 309_220_868_096, 8000, nvlink=True),
)
# Dense BF16 tensor TFLOPS: spec-sheet figures (vendor datasheets print "with sparsity" figures
# for NVIDIA; dense is half of those), peaks that real kernels do not reach. Used only by the
# simulator's roofline step-time estimate. NVIDIA datasheets: H100 (SXM 1,979 / PCIe 1,513 / NVL
# 1,671 with sparsity), H200 (1,979 with sparsity), HGX B200 (36 PFLOPS per 8 GPUs with
# sparsity), GB200 NVL72 (360 PFLOPS per 72 GPUs with sparsity), A100 (312 dense), L40S (362
# dense), L4 (242 with sparsity), A10 (125 dense), A40 (149.7 dense), RTX A6000 (309.7 with
# sparsity). AMD spec pages: MI300X and MI325X 1,307.4, MI355X 2.5 PFLOPS dense. None for the
# GeForce cards (half-rate FP32 accumulation), the T4 (no BF16), the A10G, GB10 and the RTX PRO
# Blackwell cards (no dense BF16 figure published).
_DENSE_BF16_TFLOPS = {
    "h100": 989.0, "h100-pcie": 756.0, "h100-nvl": 835.0, "h200": 989.0, "b200": 2250.0, "gb200": 2500.0,
    "a100-40gb": 312.0, "a100-80gb": 312.0, "l40s": 362.0, "l4": 121.0, "a10": 125.0, "a40": 149.7,
    "rtx-a6000": 154.8, "mi300x": 1307.4, "mi325x": 1307.4, "mi355x": 2500.0,
}
_BY_NAME = {gpu.name: gpu for gpu in GPUS}
_ALIASES = {"h100-sxm": "h100", "h200-sxm": "h200", "a100": "a100-80gb", "a100-40g": "a100-40gb",
            "a100-80g": "a100-80gb", "4080": "rtx4080", "4090": "rtx4090", "5090": "rtx5090",
            "3090": "rtx3090",
            "a6000": "rtx-a6000", "rtx-pro-6000-blackwell": "rtx-pro-6000", "pro6000": "rtx-pro-6000",
            "rtx-pro-4500-blackwell": "rtx-pro-4500", "dgx-spark": "gb10", "spark": "gb10"}


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


def default_max_num_batched_tokens(total_bytes: int, is_a100: bool, large_tier: bool = True) -> int:
    """vLLM's `vllm serve` default (EngineArgs.get_batch_defaults): by device memory class; the
    >= 160 GiB tier exists from 0.28.0 (`large_tier`). `is_a100`: a card kept off the >= 70 GiB
    tier (Gpu.small_batch_tier)."""
    if total_bytes >= 160 * GIB and large_tier:
        return 16384
    if total_bytes >= 70 * GIB and not is_a100:
        return 8192
    return 2048


def default_max_num_seqs(total_bytes: int, is_a100: bool) -> int:
    """vLLM's default max_num_seqs (EngineArgs.get_batch_defaults, the same in 0.11-0.33): 1,024 on
    cards of >= 70 GiB other than the A100 (and from 0.33 the GB10: Gpu.small_batch_tier), else 256."""
    return 1024 if total_bytes >= 70 * GIB and not is_a100 else 256


# Planning without a GPU (`hkv run` on CPU, or an exact KV budget and gpu=None).
NO_GPU_MAX_NUM_BATCHED_TOKENS = default_max_num_batched_tokens(0, is_a100=False)
