"""VllmLog: what a vLLM start-up log (or a paste of some of its lines) says about KV cache sizing.

Read from the lines vLLM prints through its logger (format strings of vLLM 0.10-0.32), with or
without the "(EngineCore pid=7) INFO 11-22 00:06:47 [file.py:12] " prefix:

    vLLM server version 0.32.0, serving model ...          (0.2x-0.3x; "vLLM API server version" before)
    Initializing a V1 LLM engine (v0.11.0) with config: model='...', ..., max_seq_len=..., ...
    non-default args: {'model': '...', 'max_model_len': 8192, 'tensor_parallel_size': 2, ...}
    Available KV cache memory: 37.5 GiB                     (%.2f before 0.2x, round(x, 2) since)
    GPU KV cache size: 81,920 tokens, Maximum concurrency for 8,192 tokens per request: 10.00x
                                                            (two lines before vLLM 0.28)
    Add 8 padding layers, may waste at most 15.38% KV cache memory
    Setting attention block size to 528 tokens to ensure that attention page size is >= mamba page size.
    Padding mamba page size by 0.19% to ensure that mamba page size and attention page size are ...
    There is a latency regression when using chunked local attention with the hybrid KV cache
    manager. Disabling it, by default. ...
    (and the memory lines: weights, profile, free memory, CUDA graphs; vllm_memory_lines.py)

Pure: no I/O. A line that appears several times (one per rank) counts once, the last one wins.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hkv.planner.engines.vllm.logged_memory import LoggedMemory
from hkv.planner.engines.vllm.memory_lines import read_logged_memory
from hkv.planner.errors import InvalidInputError

_VERSION_RES = (
    re.compile(r"vLLM (?:API )?server version (v?\d+\.\d+[\w.+-]*)"),
    re.compile(r"Initializing a V\d LLM engine \(v?(\d+\.\d+[\w.+-]*)\)"),
    re.compile(r"█\s+version (\d+\.\d+[\w.+-]*)"),  # the start-up banner (0.21+)
)
_NON_DEFAULT_RE = re.compile(r"non-default args: (\{.*\})\s*$")
_ENGINE_CONFIG_RE = re.compile(r"LLM engine \(v[^)]*\) with config: (.*)$")
_CONFIG_ITEM_RE = re.compile(r"(?:^|, )(\w+)=('(?:[^'\\]|\\.)*'|[^,]*)")
_AVAILABLE_RE = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
_TOKENS_RE = re.compile(r"(\w+(?: \+ host)?) KV cache size: ([\d,]+) tokens")
_CONCURRENCY_RE = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
_PADDING_RE = re.compile(r"Add (\d+) padding layers, may waste at most ([\d.]+)% KV cache memory")
_BLOCK_RE = re.compile(r"Setting attention block size to (\d+) tokens to ensure that attention page size is "
                       r">= mamba page size")
_MAMBA_PAD_RE = re.compile(r"Padding mamba page size by ([\d.]+)% to ensure")
_CHUNKED_DISABLED = "latency regression when using chunked local attention with the hybrid KV cache"
# Engine config keys worth reading (the rest of that line is printed reprs hkv has no use for).
_CONFIG_KEYS = {"model": "model", "max_seq_len": "max_model_len", "tensor_parallel_size": "tensor_parallel_size",
                "pipeline_parallel_size": "pipeline_parallel_size", "kv_cache_dtype": "kv_cache_dtype",
                "enable_prefix_caching": "enable_prefix_caching", "dtype": "dtype", "enforce_eager": "enforce_eager",
                "quantization": "quantization"}


@dataclass(frozen=True)
class VllmLog:
    """The KV-cache facts of one log; None where the log does not say."""

    version: str | None = None
    # The engine's settings: the engine config line's, overridden by `non-default args`
    # (vLLM's own names: max_model_len, tensor_parallel_size, block_size, ...).
    args: Mapping[str, Any] = field(default_factory=dict)
    available_kv_gib: str | None = None  # as printed: "37.5", "89.71"
    device: str | None = None  # "GPU", "CPU", ...
    kv_cache_tokens: int | None = None
    concurrency_len: int | None = None  # the "Maximum concurrency for N tokens" N
    max_concurrency: str | None = None  # as printed, two decimals: "2.96"
    one_line: bool | None = None  # both capacity figures on one line (vLLM 0.28+)
    padding_layers: tuple[int, str] | None = None  # (count, waste % as printed)
    attention_block_size: int | None = None  # "Setting attention block size to N tokens"
    mamba_padding_pct: str | None = None  # "Padding mamba page size by X%"
    hybrid_disabled_for_chunked: bool = False  # the chunked-local latency warning
    memory: LoggedMemory = field(default_factory=LoggedMemory)  # the memory lines (vllm_memory_lines.py)

    @property
    def has_capacity(self) -> bool:
        return self.kv_cache_tokens is not None or self.max_concurrency is not None


def read_vllm_log(lines: Iterable[str]) -> VllmLog:
    """Parse every line; InvalidInputError when the text holds none of the lines above."""
    found: dict[str, Any] = {}
    config_args: dict[str, Any] = {}
    non_default: dict[str, Any] = {}
    lines = list(lines)
    memory = read_logged_memory("\n".join(lines))
    for raw in lines:
        line = raw.rstrip("\r\n")
        for pattern in _VERSION_RES:
            if match := pattern.search(line):
                found["version"] = match[1].removeprefix("v")
        if match := _ENGINE_CONFIG_RE.search(line):
            config_args.update(_engine_config(match[1]))
        if match := _NON_DEFAULT_RE.search(line):
            non_default.update(_literal_dict(match[1]))
        if match := _AVAILABLE_RE.search(line):
            found["available_kv_gib"] = match[1]
        tokens = _TOKENS_RE.search(line)
        concurrency = _CONCURRENCY_RE.search(line)
        if tokens:
            found["device"], found["kv_cache_tokens"] = tokens[1], _int(tokens[2])
        if concurrency:
            found["concurrency_len"], found["max_concurrency"] = _int(concurrency[1]), concurrency[2]
        if tokens or concurrency:
            found["one_line"] = bool(tokens and concurrency)
        if match := _PADDING_RE.search(line):
            found["padding_layers"] = (int(match[1]), match[2])
        if match := _BLOCK_RE.search(line):
            found["attention_block_size"] = int(match[1])
        if match := _MAMBA_PAD_RE.search(line):
            found["mamba_padding_pct"] = match[1]
        if _CHUNKED_DISABLED in line:
            found["hybrid_disabled_for_chunked"] = True
    args = {**config_args, **non_default}
    if not found and not args and memory.is_empty:
        raise InvalidInputError(
            "the log holds none of vLLM's start-up lines hkv reads (\"KV cache size\", \"Maximum concurrency\", "
            "\"Available KV cache memory\", \"non-default args\", its memory lines); paste vLLM's start-up log",
            fields=("log_file",))
    return VllmLog(args=args, memory=memory, **found)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _literal_dict(text: str) -> dict[str, Any]:
    """vLLM prints `non-default args` as a Python dict repr; literal_eval reads it without executing
    anything. A repr holding objects (rare) falls back to its plain key: value items."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return dict(_scalar_items(text))
    return dict(value) if isinstance(value, dict) else {}


def _scalar_items(text: str) -> Iterable[tuple[str, Any]]:
    for match in re.finditer(r"'(\w+)': ('[^']*'|[\w.+-]+)", text):
        yield match[1], _scalar(match[2])


def _engine_config(text: str) -> dict[str, Any]:
    items = {key: value for key, value in _CONFIG_ITEM_RE.findall(text)}
    return {name: _scalar(items[key]) for key, name in _CONFIG_KEYS.items() if key in items}


def _scalar(text: str) -> Any:
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.removeprefix("torch.")
