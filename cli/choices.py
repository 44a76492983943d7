"""The closed choices of the CLI, each an Enum built from the library's own list of names, so
that click rejects any other value as a usage error (exit 2) and --help lists the choices."""

from __future__ import annotations

from enum import Enum

from hkv.planner.engines.sglang.launch_command import LAUNCH_TARGETS
from hkv.planner.engines.vllm.serve_command import SERVE_TARGETS
from hkv.planner.plan_config import DTYPE_BYTES, KV_CACHE_DTYPES, LAYOUT_NAMES, VLLM_LOG_FORMATS
from hkv.runtime.live.prompt_file import PROMPT_FORMATS
from hkv.runtime.live.run_config import DEVICES, RUN_LAYOUTS

ALL_LAYOUTS = "all"


def _choices(name: str, values: tuple[str, ...] | list[str]) -> type[Enum]:
    return Enum(name, {value: value for value in values}, type=str)  # type: ignore[return-value]


PlanLayout = _choices("PlanLayout", LAYOUT_NAMES)
SimulateLayout = _choices("SimulateLayout", (*LAYOUT_NAMES, ALL_LAYOUTS))
RunLayout = _choices("RunLayout", RUN_LAYOUTS)
Device = _choices("Device", DEVICES)
Dtype = _choices("Dtype", list(DTYPE_BYTES))
KvCacheDtype = _choices("KvCacheDtype", KV_CACHE_DTYPES)
VllmLog = _choices("VllmLog", VLLM_LOG_FORMATS)
PromptFormat = _choices("PromptFormat", PROMPT_FORMATS)
Emit = _choices("Emit", (*SERVE_TARGETS, *LAUNCH_TARGETS))
