"""read_logged_memory: the memory lines of a vLLM start-up log (0.7 V0 to 0.32), one regex per kind.

Each LineKind below is one clause vLLM prints (worker/gpu_worker.py, gpu_model_runner.py,
gpu/model_runner.py, utils/mem_utils.py of the released wheels; the V0 worker.py for 0.7), the
LoggedMemory fields its groups fill and the constants it implies. Clauses are matched, not whole
messages, and every space in a pattern matches any whitespace, so the
"(EngineCore pid=7) INFO 11-22 00:06:47 [file.py:12]" prefix, an author's re-wrapping of a long
line, quote marks at line starts ("▎ ", "> ") and markdown emphasis do not matter. A figure printed several times (one
line per rank, the loading line and the usage line) keeps the most precise printing, then the last.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hkv.planner.engines.logged_figure import LoggedFigure
from hkv.planner.engines.vllm.logged_memory import LoggedMemory

_NUM = r"(-?\d+(?:\.\d+)?)"
_GIB = r"\s?GiB"
_QUOTE_MARKS = re.compile(r"^[ \t▎>│]+", re.MULTILINE)
_MARKDOWN_EMPHASIS = re.compile(r"\*\*|`")  # authors' summaries: "- **Model loading took:** 13.47 GiB"


def _gib(text: str | None) -> LoggedFigure | None:
    return None if text is None else LoggedFigure(text)


def _bytes(text: str | None) -> LoggedFigure | None:
    return None if text is None else LoggedFigure(text, "bytes")


def _text(text: str | None) -> str | None:
    return text


def _int(text: str | None) -> int | None:
    return None if text is None else int(text)


def _is_v2_runner(gpu_prefix: str | None) -> bool:
    """"model_runner.py" (V2, vllm/v1/worker/gpu/) rather than "gpu_model_runner.py" (V1)."""
    return gpu_prefix is None


@dataclass(frozen=True)
class LineKind:
    name: str
    pattern: re.Pattern[str]
    fields: tuple[tuple[str, Callable[[str | None], Any]], ...]  # per group: LoggedMemory field, converter
    constants: Mapping[str, Any] = field(default_factory=dict)  # fields every match sets


def _kind(name: str, pattern: str, *fields: tuple[str, Callable[[str | None], Any]], **constants: Any) -> LineKind:
    return LineKind(name, re.compile(pattern.replace("NUM", _NUM).replace(" ", r"\s+")), fields, constants)


LINE_KINDS: tuple[LineKind, ...] = (
    # Loading (V1 runner: gpu_model_runner.py; V2 runner: gpu/model_runner.py; "memory" from 0.11).
    _kind("weights loaded", r"Model loading took:? NUM GiB(?: memory)? and", ("weights", _gib)),
    _kind("model runner", r"(gpu_)?model_runner\.py:\d+\]?\s*Model loading took", ("v2_model_runner", _is_v2_runner)),
    _kind("weights loaded (V0)", r"Loading model weights took NUM GB", ("weights", _gib)),
    # V0 engine's profile summary (one message over several lines).
    _kind("V0 requested", r"total_gpu_memory \(NUM" + _GIB + r"\) x gpu_memory_utilization \(NUM\) = NUM" + _GIB,
          ("total", _gib), ("utilization", _text), ("requested", _gib), usage_format="v0"),
    _kind("V0 weights", r"model weights take NUM" + _GIB, ("weights", _gib)),
    _kind("V0 non-torch", r"non_torch_memory takes NUM" + _GIB, ("non_torch", _gib)),
    _kind("V0 activation", r"PyTorch activation peak memory takes NUM" + _GIB, ("torch_peak", _gib)),
    _kind("V0 KV cache", r"the rest of the memory reserved for KV Cache is NUM" + _GIB, ("available", _gib)),
    # V1 debug lines (gpu_worker.determine_available_memory, mem_utils.MemoryProfilingResult).
    _kind("initial free", r"Initial free memory: NUM GiB; Requested memory: NUM \(util\), NUM GiB",
          ("free_at_start", _gib), ("utilization", _text), ("requested", _gib)),
    _kind("non-KV total", r"Total non KV cache memory: NUM" + _GIB, ("non_kv_total", _gib)),
    _kind("torch peak", r"torch peak memory increase: NUM" + _GIB, ("torch_peak", _gib)),
    _kind("non-torch increase", r"non-torch forward increase memory: NUM" + _GIB, ("non_torch", _gib)),
    _kind("total consumed", r"total consumed \(from mem_get_info\): NUM" + _GIB, ("consumed", _gib)),
    _kind("weights memory", r"weights memory: NUM" + _GIB, ("weights", _gib)),
    # The usage summary printed after graph capture (0.10+), and vLLM's refusal when free < requested.
    _kind("free at start-up", r"Free memory on device(?: \S+)? \(NUM/NUM GiB\) on startup",
          ("free_at_start", _gib), ("total", _gib)),
    _kind("free below requested", r"on startup is less than desired GPU memory utilization",
          free_below_requested=True),
    _kind("requested", r"[Dd]esired GPU memory utilization(?: is)? \(NUM, NUM GiB\)",
          ("utilization", _text), ("requested", _gib)),
    _kind("usage: weights", r"NUM GiB for weight\b", ("weights", _gib), usage_format="split"),
    _kind("usage: consumed", r"NUM GiB for consumed memory \(weights \+ non-torch\)", ("consumed", _gib),
          usage_format="consumed"),
    _kind("usage: peak activation", r"NUM GiB for peak activation", ("peak_activation", _gib)),
    _kind("usage: non-torch", r"NUM GiB for non-torch memory", ("non_torch", _gib)),
    _kind("usage: CUDA graphs", r"NUM GiB for CUDAGraph memory", ("graph_actual", _gib)),
    _kind("kv-cache-memory to fit", r"--kv-cache-memory=(\d+)`?(?: \(" + _NUM + r" GiB\))? to fit into requested",
          ("kv_fit_requested", _bytes)),
    # CUDA graphs: the estimate (0.19+), the captured pool.
    _kind("graph estimate", r"Estimated CUDA graph memory: NUM GiB total", ("graph_estimate", _gib)),
    _kind("graph pool", r"CUDA graph pool memory: NUM GiB \(actual\), NUM GiB \(estimated\)",
          ("graph_actual", _gib), ("graph_estimate", _gib)),
    _kind("graph capture", r"Graph capturing finished in NUM secs, took NUM GiB", ("", _text), ("graph_actual", _gib)),
    _kind("graph estimate off", r"CUDA graph memory profiling is disabled", graph_estimate_disabled=True),
    _kind("utilization (graph hint)", r"current --gpu-memory-utilization=NUM is equivalent", ("utilization", _text)),
    _kind("utilization (0.19 hint)", r"increase --gpu-memory-utilization from NUM to", ("utilization", _text)),
    _kind("available", r"Available KV cache memory:? NUM GiB", ("available", _gib)),
    # What changes the meaning of the budget: LoRA, KV connectors and offloading, unified memory.
    _kind("LoRA", r"(?:enable_lora'?[:=]\s*True|--enable-lora\b)", lora=True),
    _kind("max_loras", r"max_loras'?[:=]\s*(\d+)", ("max_loras", _int)),
    _kind("max_lora_rank", r"max_lora_rank'?[:=]\s*(\d+)", ("max_lora_rank", _int)),
    _kind("KV connector", r"\b([A-Z]\w*Connector(?:V\d)?)\b", ("kv_connectors", _text)),
    _kind("KV offloading", r"(?:kv_offloading_size'?[:=]\s*|--kv-offloading-size[= ])NUM",
          ("kv_offloading_gib", _text)),
    _kind("unified memory device", r"\b(GB10|DGX Spark|Jetson \w+)\b", ("unified_memory_hint", _text)),
)
_ACCUMULATED = frozenset({"kv_connectors"})


def read_logged_memory(text: str) -> LoggedMemory:
    """Every LINE_KINDS clause in `text` (the whole log); an empty LoggedMemory when none."""
    text = _MARKDOWN_EMPHASIS.sub("", _QUOTE_MARKS.sub("", text))
    found: dict[str, Any] = {}
    for kind in LINE_KINDS:
        for match in kind.pattern.finditer(text):
            found.update(kind.constants)
            for index, (name, convert) in enumerate(kind.fields, start=1):
                if name:
                    _merge(found, name, convert(match[index]))
    return replace(LoggedMemory(), **found)


def _merge(found: dict[str, Any], name: str, value: Any) -> None:
    if value is None:
        return
    if name in _ACCUMULATED:
        if value not in found.get(name, ()):
            found[name] = (*found.get(name, ()), value)
        return
    old = found.get(name)
    if isinstance(old, LoggedFigure) and isinstance(value, LoggedFigure) and \
            old.half_unit_bytes < value.half_unit_bytes:
        return  # keep the more precise printing of the same figure
    found[name] = value
