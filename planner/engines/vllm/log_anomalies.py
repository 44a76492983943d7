"""What in a start-up log changes what its memory figures mean, each as a named sentence.

    lora                   --enable-lora: vLLM holds adapter slots and profiles with them; hkv
                           does not model that memory
    kv_connector           a KV connector or CPU offloading: blocks are sent, received or mirrored
                           outside the GPU pool, so the pool is not all a request's cache
    memory_in_use_at_start free memory at start-up more than 1 GiB below the total: another process
                           (or, at TP > 1, this engine's own communication buffers) held it; vLLM
                           still asks for total x utilization
    free_below_requested   vLLM refused to start: free memory < total x utilization
    accounting             the logged figures do not add up to the logged budget, or add up under
                           another rule than the release's (log_accounting.py)
    unified_memory         a unified-memory device (GB10 / DGX Spark): free memory is the OS's
    negative_budget        the logged budget is below zero: vLLM cannot start

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.vllm.log import VllmLog
from hkv.planner.engines.vllm.log_accounting import AccountingCheck
from hkv.planner.engines.vllm.log_budget_terms import BudgetComparison, unified_memory_device
from hkv.planner.engines.logged_figure import GIB
from hkv.planner.engines.vllm.logged_memory import LoggedMemory

IN_USE_THRESHOLD_BYTES = GIB  # CUDA context and allocator slack stay below this on one GPU


@dataclass(frozen=True)
class Anomaly:
    name: str
    text: str


def detect_anomalies(log: VllmLog, comparison: BudgetComparison | None) -> tuple[Anomaly, ...]:
    m = log.memory
    found = [_lora(log), _connector(log), *_free_memory(log, comparison), _negative(m)]
    if comparison is not None and comparison.accounting is not None:
        found.append(_accounting(comparison.accounting, comparison.v2_runner))
    return tuple(a for a in found if a is not None)


def _lora(log: VllmLog) -> Anomaly | None:
    m = log.memory
    if not (m.lora or log.args.get("enable_lora") is True):
        return None
    sizes = ", ".join(f"{name} {value}" for name, value in (("max_loras", m.max_loras or log.args.get("max_loras")),
                                                             ("max_lora_rank", m.max_lora_rank or
                                                              log.args.get("max_lora_rank"))) if value)
    return Anomaly("lora", f"LoRA enabled{f' ({sizes})' if sizes else ''}: vLLM allocates the adapters' weight "
                           "slots and profiles with them; hkv does not model that memory, so its weights and "
                           "activation terms leave it out")


def _connector(log: VllmLog) -> Anomaly | None:
    m = log.memory
    transfer = log.args.get("kv_transfer_config")
    names = list(m.kv_connectors)
    if isinstance(transfer, dict) and transfer.get("kv_connector") and transfer["kv_connector"] not in names:
        names.append(str(transfer["kv_connector"]))
    offload = m.kv_offloading_gib or log.args.get("kv_offloading_size")
    if not names and offload is None and transfer is None:
        return None
    parts = []
    if names:
        parts.append(f"KV connector {', '.join(names)}")
    elif transfer is not None:
        parts.append("a KV transfer config")
    if offload is not None:
        parts.append(f"KV offloading to CPU ({offload} GiB)")
    return Anomaly("kv_connector", f"{' and '.join(parts)}: blocks are sent, received or mirrored outside the GPU "
                                   "pool, so the logged capacity is the GPU pool's only and a block may be held "
                                   "for a transfer; hkv models the GPU pool alone")


def _free_memory(log: VllmLog, comparison: BudgetComparison | None) -> list[Anomaly | None]:
    m = log.memory
    unified = m.unified_memory_hint or (unified_memory_device(comparison.config) if comparison else None)
    out: list[Anomaly | None] = []
    if unified:
        out.append(Anomaly("unified_memory", f"unified memory ({unified}): CUDA reports the system memory as the "
                                             "device total and vLLM takes free memory from the OS, so the host's "
                                             "own use and page cache come out of the same pool; total x "
                                             "utilization must still fit what the OS has free"))
    if m.free_below_requested:
        out.append(Anomaly("free_below_requested",
                           f"vLLM refused to start: free memory at start-up ({_text(m.free_at_start)} GiB) is below "
                           f"total x utilization ({_text(m.requested)} GiB); lower --gpu-memory-utilization or free "
                           "the GPU"))
    if m.free_at_start is None or m.total is None:
        return out
    in_use = m.total.bytes - m.free_at_start.bytes
    if in_use <= IN_USE_THRESHOLD_BYTES:
        return out
    tp = int(log.args.get("tensor_parallel_size") or 1)
    who = "the host (unified memory)" if unified else "another process" + (
        f" (or, at TP {tp}, this engine's own communication buffers)" if tp > 1 else "")
    text = (f"{in_use / GIB:.2f} GiB of the device's {m.total.text} GiB was in use before vLLM sized its budget "
            f"(free {m.free_at_start.text} GiB): {who} held it. vLLM still asks for total x utilization")
    if m.requested is not None:
        headroom = m.free_at_start.bytes - m.requested.bytes
        text += f" = {m.requested.text} GiB, " + (
            f"{headroom / GIB:.2f} GiB below what was free" if headroom >= 0 else
            f"{-headroom / GIB:.2f} GiB MORE than was free: this start can fail or run out of memory")
    out.append(Anomaly("memory_in_use_at_start", text + "; a blind budget assumes an idle GPU"))
    return out


def _negative(m: LoggedMemory) -> Anomaly | None:
    if m.available is None or m.available.bytes >= 0:
        return None
    return Anomaly("negative_budget", f"the logged budget is {m.available.text} GiB: weights and the profile's "
                                      "terms exceed total x utilization, so vLLM cannot allocate a KV cache")


def _accounting(check: AccountingCheck, v2_runner: bool) -> Anomaly | None:
    if not check.adds_up:
        return Anomaly("accounting", f"the logged figures do not add up: {check.sentence} (off by "
                                     f"{check.residual_bytes / GIB:+.2f} GiB, beyond rounding); a figure may come "
                                     "from another start or rank, or be transcribed")
    if check.follows_release:
        return None
    runner = " (V2 model runner)" if v2_runner else ""
    return Anomaly("accounting", f"the logged figures add up as '{', '.join(check.matching_rules)}', not as "
                                 f"'{check.expected_rule}' the release{runner} uses: "
                                 "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS or the model runner differ from the "
                                 "defaults, or the release is not the one named")


def _text(figure: object) -> str:
    return "?" if figure is None else getattr(figure, "text", "?")
