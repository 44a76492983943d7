"""The memory sizes an SGLang log prints next to its pools ("K size: 1.90 GB, V size: 1.90 GB",
"SWAKVPool mem usage: 79.94 GB"), checked against the lines hkv predicts SGLang prints for the same
pools (startup_lines.py), read back by the same reader so both sides are compared as printed.

Pure: no I/O.
"""

from __future__ import annotations

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.log_check import LogCheck
from hkv.planner.engines.sglang.log import KvPoolLine, SglangLog, read_sglang_log
from hkv.planner.engines.sglang.pool_resolution import resolve
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.engines.sglang.startup_lines import start_up_lines

DEFAULT_CHUNKED_PREFILL_SIZE = 8192  # only the scheduler line prints it; no size depends on it


def predicted_log(model: ModelSpec, args: SglangServerArgs, budget_bytes: int, mem_fraction_static: float) -> SglangLog:
    """The start-up lines hkv predicts at `budget_bytes`, read as a log."""
    resolution = resolve(model, args, budget_bytes, mem_fraction_static)
    return read_sglang_log(start_up_lines(resolution, args.chunked_prefill_size or DEFAULT_CHUNKED_PREFILL_SIZE))


def size_checks(log: SglangLog, predicted: SglangLog) -> tuple[LogCheck, ...]:
    """One check per printed size; a size the prediction does not print reads "not printed"."""
    checks = []
    for name, logged, ours in (("KV Cache size (GiB)", log.kv_pool, predicted.kv_pool),
                               ("SWA KV Cache size (GiB)", log.swa_kv_pool, predicted.swa_kv_pool)):
        if logged is not None:
            mine = "not printed" if ours is None else _sizes(ours)
            checks.append(LogCheck(name, _sizes(logged), mine, mine == _sizes(logged)))
    if log.swa_pool_usage is not None:
        mine = "not printed" if predicted.swa_pool_usage is None else predicted.swa_pool_usage.text
        checks.append(LogCheck("SWAKVPool mem usage (GiB)", log.swa_pool_usage.text, mine,
                               mine == log.swa_pool_usage.text))
    return tuple(checks)


def _sizes(pool: KvPoolLine) -> str:
    """"1.90 + 1.90" (K + V) or "40.31" (one MLA buffer), as printed."""
    return " + ".join(figure.text for figure in pool.sizes_gib)
