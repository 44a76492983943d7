"""Start-up verdicts: what an engine decides about a plan before it serves a request.

This package owns the engines' start-up refusals and warnings as hkv predicts them from a plan:
each issue's code, the engine's own text (as the engine formats it, numbers filled in), the
smallest change that fixes it, and the releases whose source the text and threshold were read
from. `vllm_startup(plan)` and `sglang_startup(planned)` return a frozen StartupVerdict; nothing
here sizes a pool or a budget (planner/, planner/budget/ and planner/engines/ do); it reads theirs.
Pure: no I/O.
"""

from hkv.planner.startup.issue import StartupIssue, StartupVerdict
from hkv.planner.startup.release_range import ReleaseRange
from hkv.planner.startup.sglang_verdict import sglang_refusal, sglang_startup
from hkv.planner.startup.vllm_verdict import vllm_startup

__all__ = ["ReleaseRange", "StartupIssue", "StartupVerdict", "sglang_refusal", "sglang_startup", "vllm_startup"]
