"""The closed choices of the CLI, each an Enum built from the library's own list of names, so
that click rejects any other value as a usage error (exit 2) and --help lists the choices.

Each Enum is built on first use (PEP 562 `__getattr__`, one class per name for the process's
life): `run`'s choices come from the runtime, which `hkv plan` has no other reason to import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from functools import cache
from typing import TYPE_CHECKING, Any

from hkv.planner.engines.emit_targets import LAUNCH_TARGETS, SERVE_TARGETS
from hkv.planner.plan_config import DTYPE_BYTES, KV_CACHE_DTYPES, LAYOUT_NAMES, VLLM_LOG_FORMATS

ALL_LAYOUTS = "all"


def _run_layouts() -> Sequence[str]:
    from hkv.runtime.live.run_config import RUN_LAYOUTS

    return RUN_LAYOUTS


def _devices() -> Sequence[str]:
    from hkv.runtime.live.run_config import DEVICES

    return DEVICES


def _prompt_formats() -> Sequence[str]:
    from hkv.runtime.live.prompt_file import PROMPT_FORMATS

    return PROMPT_FORMATS


# Enum name -> its values, read when the Enum is first asked for.
_VALUES: dict[str, Callable[[], Sequence[str]]] = {
    "PlanLayout": lambda: LAYOUT_NAMES,
    "SimulateLayout": lambda: (*LAYOUT_NAMES, ALL_LAYOUTS),
    "RunLayout": _run_layouts,
    "Device": _devices,
    "Dtype": lambda: list(DTYPE_BYTES),
    "KvCacheDtype": lambda: KV_CACHE_DTYPES,
    "VllmLog": lambda: VLLM_LOG_FORMATS,
    "PromptFormat": _prompt_formats,
    "Emit": lambda: (*SERVE_TARGETS, *LAUNCH_TARGETS),
}

if TYPE_CHECKING:
    PlanLayout: type[Enum]
    SimulateLayout: type[Enum]
    RunLayout: type[Enum]
    Device: type[Enum]
    Dtype: type[Enum]
    KvCacheDtype: type[Enum]
    VllmLog: type[Enum]
    PromptFormat: type[Enum]
    Emit: type[Enum]


@cache
def _choices(name: str) -> type[Enum]:
    values = _VALUES[name]()
    return Enum(name, {value: value for value in values}, type=str)  # type: ignore[return-value]


def __getattr__(name: str) -> Any:
    if name in _VALUES:
        return _choices(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
