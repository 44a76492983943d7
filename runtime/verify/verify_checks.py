"""The checks of `hkv verify`: what hkv's `vllm` layout predicts vs what the real vLLM engine did.

One Check per figure: the capacity line vLLM logs, its num_gpu_blocks, the block size it resolved,
its padding / Mamba alignment messages, its in-flight token allowance T, and the sustained
concurrency measured by running max-length requests. A check whose prediction hkv cannot make yet
has ok = None: reported, never a failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Any

from hkv.runtime.verify.sustained_search import SustainedSearch
from hkv.runtime.verify.vllm_engine_args import EngineSettings
from hkv.runtime.verify.vllm_startup_log import NOTE_KEYS, StartupLog
from hkv.planner.capacity import vllm_log_lines
from hkv.planner.plan import LayoutReport

NO_SUSTAINED_PREDICTION = ("no prediction yet: this hkv's planner has no capacity.sustained_concurrency; "
                           "vLLM's measured figure is reported")


@dataclass(frozen=True)
class Check:
    name: str
    predicted: Any  # JSON-safe
    measured: Any  # JSON-safe
    ok: bool | None  # None: nothing to compare with (not a failure)
    note: str = ""


def _predicted_sustained(report: LayoutReport) -> int | None:
    """hkv's sustained-concurrency prediction for the layout, None while the planner makes none."""
    return getattr(report.capacity, "sustained_concurrency", None)


def _compared(name: str, predicted: Any, measured: Any, note: str = "") -> Check:
    return Check(name, predicted, measured, predicted == measured, note)


def _measurement_limit(search: SustainedSearch, request_lens: tuple[int, int], engine: dict[str, Any]) -> str:
    """Why the measured sustained figure may read low, "" when it cannot. Requests are admitted one
    prefill after another (ceil(prompt_len / max_num_batched_tokens) steps each); N overlap only if
    the first one's output (output_len steps) outlasts N - 1 such prefills."""
    if search.capped:
        return f"capped: {search.sustained} (max_num_seqs) requests ran clean, vLLM may sustain more"
    prompt_len, output_len = request_lens
    prefill_steps = ceil(prompt_len / engine["max_num_batched_tokens"])
    if search.sustained * prefill_steps > output_len:
        return (f"may read low: {search.sustained + 1} requests need {search.sustained * prefill_steps} "
                f"prefill steps after the first, more than its {output_len} output tokens")
    return ""


def verify_checks(report: LayoutReport, settings: EngineSettings, engine: dict[str, Any],
                  startup: StartupLog, search: SustainedSearch, request_lens: tuple[int, int]) -> list[Check]:
    """`engine` is what the driver's "ready" event said vLLM resolved; `request_lens` the
    (prompt_len, output_len) of the sustained runs' requests."""
    layout = report.layout
    predicted_line = vllm_log_lines(layout, "current", settings.device_name)[0]
    predicted_notes = sorted(n for n in layout.notes if any(key in n for key in NOTE_KEYS))
    limit = _measurement_limit(search, request_lens, engine)
    predicted_sustained = _predicted_sustained(report)
    if predicted_sustained is None:
        sustained = Check("sustained concurrency", None, search.sustained, None,
                          "; ".join(filter(None, (NO_SUSTAINED_PREDICTION, limit))))
    else:
        sustained = _compared("sustained concurrency", predicted_sustained, search.sustained, limit)
    return [
        _compared("capacity line", predicted_line, startup.capacity_line,
                  "" if startup.capacity_line else "vLLM logged no capacity line"),
        _compared("num_blocks", layout.pools[0].num_blocks, engine["num_gpu_blocks"]),
        _compared("block size", min(g.block_size for g in layout.groups), engine["block_size"]),
        _compared("padding / alignment messages", predicted_notes, list(startup.notes)),
        _compared("in-flight tokens T", layout.in_flight_tokens, engine["max_in_flight_tokens"]),
        sustained,
    ]


def all_ok(checks: list[Check]) -> bool:
    """No check failed (ok None counts as passed: nothing to compare with)."""
    return all(check.ok is not False for check in checks)
