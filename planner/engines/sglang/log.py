"""SglangLog: what an SGLang start-up log (or a paste of some of its lines) says about its pools.

Read from the lines SGLang prints (format strings of SGLang 0.5.23, and the older ones users
post), with or without the "[2026-04-02 10:11:12 TP0] " prefix:

    server_args={'model_path': ..., 'tp_size': 4, ...}              (0.5.23: ServerArgs.resolved_dict)
    server_args=ServerArgs(model_path='...', tp_size=4, ...)       (older releases: its repr)
    Load weight begin. avail mem=78.52 GB
    Load weight end. elapsed=12.31 s, type=GptOssForCausalLM, avail mem=17.01 GB, mem usage=61.51 GB.
    Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288
    Use sliding window memory pool (all SWA). swa_layer_tokens=...
    Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 997846, K size: ... GB, V size: ... GB
    SWA KV Cache is allocated. ...                                   (no "Full"/"SWA" label before 0.5.2x)
    SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846
    Mamba Cache is allocated. max_mamba_cache_size: 47, conv_state size: 0.01GB, ssm_state size: ...
    max_running_requests is capped to 9 by the mamba state cache (max_mamba_cache_size=47, 5 state
    slots per request). ...
    max_total_num_tokens=..., chunked_prefill_size=..., max_prefill_tokens=..., max_running_requests=...,
    context_len=..., available_gpu_mem=... GB      (older: without the last field, or without the
                                                    chunked and running-requests fields)

"GB" in these lines is GiB (SGLang divides by 1 << 30). Pure: no I/O. The pool lines keep their
FIRST occurrence: each TP rank prints the same figures, and a speculative draft model's pool is
allocated (and printed) after the target's. The scheduler's summary line is printed once, by rank 0.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hkv.planner.engines.logged_figure import LoggedFigure
from hkv.planner.errors import InvalidInputError

_NUM = r"(-?\d+(?:\.\d+)?)"
_SERVER_ARGS_RE = re.compile(r"server_args=(\{.*\}|ServerArgs\(.*\))\s*$")
_WEIGHT_BEGIN_RE = re.compile(rf"Load weight begin\. avail mem={_NUM} GB")
_WEIGHT_END_RE = re.compile(rf"Load weight end\..*?avail mem={_NUM} GB, mem usage={_NUM} GB")
_SWA_SPLIT_RE = re.compile(r"Use sliding window memory pool\. full_layer_tokens=(\d+), swa_layer_tokens=(\d+)")
_ALL_SWA_RE = re.compile(r"Use sliding window memory pool \(all SWA\)\. swa_layer_tokens=(\d+)")
_SWA_POOL_RE = re.compile(rf"SWAKVPool mem usage: {_NUM} GB, swa size: (\d+), full size: (\d+)")
_KV_POOL_RE = re.compile(r"(?:^|[\] `])(Full |SWA )?KV Cache is allocated\. (?:dtype: ([\w.]+), )?#tokens: (\d+), "
                         rf"(?:K size: {_NUM} GB, V size: {_NUM} GB|KV size: {_NUM} GB)")
_MAMBA_RE = re.compile(r"Mamba Cache is allocated\. max_mamba_cache_size: (\d+)")
_MAMBA_CAP_RE = re.compile(r"max_running_requests is capped to (\d+) by the mamba state cache "
                           r"\(max_mamba_cache_size=(\d+), (\d+) state slots per request\)")
_SUMMARY_RE = re.compile(r"max_total_num_tokens=(\d+), (?:chunked_prefill_size=(-?\d+), )?(?:max_prefill_tokens=(\d+), )?"
                         r"(?:max_running_requests=(\d+), )?context_len=(\d+)"
                         rf"(?:, available_(?:gpu|cpu)_mem={_NUM} GB)?")
_DICT_ITEM_RE = re.compile(r"'(\w+)': ('(?:[^'\\]|\\.)*'|[\w.+-]+)")
# An item sits after "(" or ", " and before the next item or ")"; a paste that elides items writes "..." in
# their place (", ... tp_size=8, ..."), which counts as a neighbour too.
_REPR_ITEM_RE = re.compile(r"(?:\(|, |\.\.\. )(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,()\[\]{}]*)"
                           r"(?=, \w+=|, \.\.\.|\)$)")


@dataclass(frozen=True)
class KvPoolLine:
    """One "KV Cache is allocated" line: the pool's tokens and its size as printed (GiB)."""

    num_tokens: int
    dtype: str | None  # "torch.bfloat16"; older releases do not print it
    sizes_gib: tuple[LoggedFigure, ...]  # (K, V), or (KV,) for MLA-shaped pools

    @property
    def total_bytes(self) -> int:
        return sum(figure.bytes for figure in self.sizes_gib)


@dataclass(frozen=True)
class MambaCap:
    """"max_running_requests is capped to N by the mamba state cache (...)"."""

    max_running_requests: int
    max_mamba_cache_size: int
    slots_per_request: int


@dataclass(frozen=True)
class SchedulerSummary:
    """The scheduler's "max_total_num_tokens=..., ..., available_gpu_mem=... GB" line."""

    max_total_num_tokens: int
    chunked_prefill_size: int | None  # absent before 0.3 (as the two below, in the oldest releases)
    max_prefill_tokens: int | None
    max_running_requests: int | None
    context_len: int
    available_gpu_mem: LoggedFigure | None  # free memory after pools and CUDA graphs


@dataclass(frozen=True)
class SglangLog:
    """The pool facts of one SGLang log; None where the log does not say."""

    args: Mapping[str, Any] = field(default_factory=dict)  # the server_args dump, SGLang's field names
    load_begin_avail: LoggedFigure | None = None  # free GiB before the weights load
    load_end_avail: LoggedFigure | None = None  # free GiB after
    weights: LoggedFigure | None = None  # "Load weight end. ... mem usage=X GB"
    full_layer_tokens: int | None = None  # "Use sliding window memory pool. full_layer_tokens="
    swa_layer_tokens: int | None = None  # its swa_layer_tokens (or the all-SWA line's)
    swa_pool_usage: LoggedFigure | None = None  # "SWAKVPool mem usage: X GB"
    swa_pool_swa_tokens: int | None = None  # "swa size: N"
    swa_pool_full_tokens: int | None = None  # "full size: M"
    kv_pool: KvPoolLine | None = None  # "KV Cache is allocated" / "Full KV Cache is allocated"
    swa_kv_pool: KvPoolLine | None = None  # "SWA KV Cache is allocated" (0.5.2x labels its pools)
    max_mamba_cache_size: int | None = None  # "Mamba Cache is allocated. max_mamba_cache_size: N"
    mamba_cap: MambaCap | None = None
    summary: SchedulerSummary | None = None

    @property
    def model_path(self) -> str | None:
        value = self.args.get("model_path")
        return str(value) if value else None

    @property
    def swa_tokens(self) -> int | None:
        """The sliding pool's tokens from whichever line printed them."""
        for value in (self.swa_layer_tokens, self.swa_pool_swa_tokens,
                      None if self.swa_kv_pool is None else self.swa_kv_pool.num_tokens):
            if value is not None:
                return value
        return None


def read_sglang_log(lines: Iterable[str]) -> SglangLog:
    """Parse every line; InvalidInputError when the text holds none of the lines above."""
    found: dict[str, Any] = {}
    for raw in lines:
        line = raw.rstrip("\r\n")
        for key, value in _line_facts(line):
            found.setdefault(key, value)  # first occurrence wins (module docstring)
    if not found:
        raise InvalidInputError(
            "the log holds none of SGLang's start-up lines hkv reads (\"server_args=\", \"KV Cache is allocated\", "
            "\"max_total_num_tokens=\", \"Use sliding window memory pool\", \"SWAKVPool mem usage\", \"Mamba Cache "
            "is allocated\"); paste SGLang's start-up log", fields=("log_file",))
    return SglangLog(**found)


def _line_facts(line: str) -> Iterable[tuple[str, Any]]:
    """(SglangLog field, value) for each fact `line` states."""
    if match := _SERVER_ARGS_RE.search(line):
        yield "args", _server_args(match[1])
    if match := _WEIGHT_BEGIN_RE.search(line):
        yield "load_begin_avail", LoggedFigure(match[1])
    if match := _WEIGHT_END_RE.search(line):
        yield "load_end_avail", LoggedFigure(match[1])
        yield "weights", LoggedFigure(match[2])
    if match := _SWA_SPLIT_RE.search(line):
        yield "full_layer_tokens", int(match[1])
        yield "swa_layer_tokens", int(match[2])
    if match := _ALL_SWA_RE.search(line):
        yield "swa_layer_tokens", int(match[1])
    if match := _SWA_POOL_RE.search(line):
        yield "swa_pool_usage", LoggedFigure(match[1])
        yield "swa_pool_swa_tokens", int(match[2])
        yield "swa_pool_full_tokens", int(match[3])
    if match := _KV_POOL_RE.search(line):
        sizes = (match[4], match[5]) if match[4] is not None else (match[6],)
        pool = KvPoolLine(int(match[3]), match[2], tuple(LoggedFigure(text) for text in sizes))
        yield ("swa_kv_pool" if match[1] == "SWA " else "kv_pool"), pool
    if match := _MAMBA_RE.search(line):
        yield "max_mamba_cache_size", int(match[1])
    if match := _MAMBA_CAP_RE.search(line):
        yield "mamba_cap", MambaCap(int(match[1]), int(match[2]), int(match[3]))
    if match := _SUMMARY_RE.search(line):
        yield "summary", SchedulerSummary(
            max_total_num_tokens=int(match[1]), chunked_prefill_size=_int_or_none(match[2]),
            max_prefill_tokens=_int_or_none(match[3]), max_running_requests=_int_or_none(match[4]),
            context_len=int(match[5]),
            available_gpu_mem=None if match[6] is None else LoggedFigure(match[6]))


def _server_args(text: str) -> dict[str, Any]:
    """0.5.23 prints a dict repr (literal_eval reads it without executing anything); older releases
    the dataclass repr `ServerArgs(a=1, b='x', ...)`. Where a repr holds objects (enums, nested
    records), its scalar items are read one by one; hkv reads none of the others."""
    if text.startswith("{"):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, dict):
            return value
        items = _DICT_ITEM_RE.findall(text)
    else:
        items = _REPR_ITEM_RE.findall(text)
    args: dict[str, Any] = {}
    for key, value in items:
        args.setdefault(key, _scalar(value))  # the first occurrence of a key
    return args


def _int_or_none(text: str | None) -> int | None:
    return None if text is None else int(text)


def _scalar(text: str) -> Any:
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
