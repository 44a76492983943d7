"""Start-up verdicts: what an engine decides about a plan before it serves a request.

This package owns the engines' start-up refusals and warnings as hkv predicts them from a plan:
each issue's code, the engine's own text (as the engine formats it, numbers filled in), the
smallest change that fixes it, and the releases whose source the text and threshold were read
from. `vllm_startup(plan)` and `sglang_startup(planned)` return a frozen StartupVerdict; nothing
here sizes a pool or a budget (planner/, planner/budget/ and planner/engines/ do); it reads theirs.
Pure: no I/O.

The names below load on first use (PEP 562 `__getattr__`), so that a vLLM-only plan does not
import the SGLang planner behind `sglang_startup`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hkv.planner.startup.issue import StartupIssue, StartupVerdict
    from hkv.planner.startup.release_range import ReleaseRange
    from hkv.planner.startup.sglang_verdict import sglang_refusal, sglang_startup
    from hkv.planner.startup.vllm_verdict import vllm_startup

_EXPORTS = {
    "StartupIssue": "issue", "StartupVerdict": "issue", "ReleaseRange": "release_range",
    "sglang_refusal": "sglang_verdict", "sglang_startup": "sglang_verdict", "vllm_startup": "vllm_verdict",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
