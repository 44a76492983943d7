"""LoggedMemory: the memory figures a vLLM start-up log printed, each as printed.

vLLM prints its memory accounting in GiB rounded to two decimals (format_gib = round(x, 2)), a
few figures with four ("Model loading took 74.2812 GiB" in 0.10) or in bytes
("--kv-cache-memory=45175492096", "Current kv cache memory in use is 47878721024 bytes" in 0.10).
A LoggedFigure keeps the printed text, so the interval it stands for stays known: 44.59 GiB is
any value in [44.585, 44.595) GiB.

Which figure means what depends on the format the release printed (`usage_format`):

    "v0"        V0 engine (<= 0.9): "model weights take ...; non_torch_memory takes ...; PyTorch
                activation peak memory takes ...; the rest ... is X GiB"
    "split"     0.10-0.26: "Actual usage is W GiB for weight, P GiB for peak activation, N GiB for
                non-torch memory, and G GiB for CUDAGraph memory" (P: the torch peak alone)
    "consumed"  0.27+: "Actual usage is C GiB for consumed memory (weights + non-torch), P GiB for
                peak activation, and G GiB for CUDAGraph memory" (P: the torch peak plus the CUDA
                graph estimate the release subtracted)

In both V1 formats G is the graph pool captured after the KV cache was sized, not the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hkv.planner.engines.logged_figure import LoggedFigure

UsageFormat = Literal["v0", "split", "consumed"]


@dataclass(frozen=True)
class LoggedMemory:
    """Per rank, as printed; None where the log does not say."""

    total: LoggedFigure | None = None  # device total as CUDA reports it
    free_at_start: LoggedFigure | None = None  # free memory when the engine took its first snapshot
    utilization: str | None = None  # gpu_memory_utilization as printed: "0.9", "0.9200"
    requested: LoggedFigure | None = None  # total x utilization
    weights: LoggedFigure | None = None
    torch_peak: LoggedFigure | None = None  # activation peak alone (V0, "split", debug lines)
    peak_activation: LoggedFigure | None = None  # "P GiB for peak activation" (meaning: usage_format)
    non_torch: LoggedFigure | None = None
    consumed: LoggedFigure | None = None  # weights + non-torch (0.27+)
    non_kv_total: LoggedFigure | None = None  # debug "Total non KV cache memory"
    graph_estimate: LoggedFigure | None = None  # "Estimated CUDA graph memory"
    graph_actual: LoggedFigure | None = None  # the captured pool ("Graph capturing finished ... took")
    available: LoggedFigure | None = None  # "Available KV cache memory" (V0: "the rest ... KV Cache")
    kv_fit_requested: LoggedFigure | None = None  # vLLM's suggested --kv-cache-memory to fit requested
    usage_format: UsageFormat | None = None
    graph_estimate_disabled: bool = False  # the VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 warning
    v2_model_runner: bool | None = None  # "Model loading took" printed by gpu/model_runner.py
    free_below_requested: bool = False  # vLLM refused: free memory at start-up < requested
    lora: bool = False  # --enable-lora
    max_loras: int | None = None
    max_lora_rank: int | None = None
    kv_connectors: tuple[str, ...] = ()  # connector class names the log mentions
    kv_offloading_gib: str | None = None  # --kv-offloading-size
    unified_memory_hint: str | None = None  # a device name the log prints that shares host memory

    @property
    def is_empty(self) -> bool:
        return self == LoggedMemory()
