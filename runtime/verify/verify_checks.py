"""The checks of `hkv verify`: what hkv's `vllm` layout predicts vs what the real vLLM engine did.

One Check per figure: the capacity line vLLM logs, its num_gpu_blocks, the block size it resolved,
its padding / Mamba alignment messages, its in-flight token allowance T, and the sustained
concurrency measured by running max-length requests (hkv's planner and hkv's runtime each predict
it), and the preemptions at the first N that does not run clean.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Any

from hkv.planner.capacity.capacity import vllm_log_lines
from hkv.planner.engines.vllm.rules import CURRENT_LOG_FORMAT
from hkv.planner.plan import LayoutReport
from hkv.runtime.verify.hkv_expectation import HkvExpectation
from hkv.runtime.verify.sustained_search import SustainedSearch
from hkv.runtime.verify.vllm_engine_args import EngineSettings
from hkv.runtime.verify.vllm_startup_log import NOTE_KEYS, StartupLog


@dataclass(frozen=True)
class Check:
    name: str
    predicted: Any  # JSON-safe
    measured: Any  # JSON-safe
    ok: bool | None  # None: nothing to compare with (not a failure)
    note: str = ""


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
                  startup: StartupLog, search: SustainedSearch, request_lens: tuple[int, int],
                  hkv: HkvExpectation, vllm_preemptions_after: int | None) -> list[Check]:
    """`engine` is what the driver's "ready" event said vLLM resolved; `request_lens` the
    (prompt_len, output_len) of the sustained runs' requests; `vllm_preemptions_after` the
    preemptions vLLM counted at its first unclean N (sustained + 1), None when the search was
    capped by max_num_seqs (no such run)."""
    layout = report.layout
    predicted_line = vllm_log_lines(layout, CURRENT_LOG_FORMAT, settings.device_name)[0]
    predicted_notes = sorted(n for n in layout.notes if any(key in n for key in NOTE_KEYS))
    limit = _measurement_limit(search, request_lens, engine)
    checks = [
        _compared("capacity line", predicted_line, startup.capacity_line,
                  "" if startup.capacity_line else "vLLM logged no capacity line"),
        _compared("num_blocks", layout.pools[0].num_blocks, engine["num_gpu_blocks"]),
        _compared("block size", min(g.block_size for g in layout.groups), engine["block_size"]),
        _compared("padding / alignment messages", predicted_notes, list(startup.notes)),
        _compared("in-flight tokens T", layout.in_flight_tokens, engine["max_in_flight_tokens"]),
        _compared("sustained concurrency", hkv.predicted, search.sustained,
                  "; ".join(filter(None, ("hkv: the planner's prediction", limit)))),
        _compared("sustained, hkv runtime", hkv.simulated, search.sustained,
                  "hkv: its scheduler and pools in vLLM-compatible mode, really allocating"),
    ]
    if vllm_preemptions_after is not None:
        n = search.sustained + 1
        checks.append(_compared(f"preemptions at N = {n}", hkv.preemptions_at(layout, n), vllm_preemptions_after,
                                "hkv: its runtime in vLLM-compatible mode"))
    return checks


def all_ok(checks: list[Check]) -> bool:
    """No check failed (ok None counts as passed: nothing to compare with)."""
    return all(check.ok is not False for check in checks)
