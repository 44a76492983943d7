"""A calibration (budget/fitted/calibration.py) from a vLLM start-up log of the user's.

The log is re-planned blind with its own settings (its release, device, flags: the same blind
config explain-log compares its terms with), then read as a budget observation: its available KV
memory, weights and graph estimate against hkv's terms for that start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.fitted.calibration import Calibration, calibrate
from hkv.planner.budget.fitted.observation import LoggedBudget, observe
from hkv.planner.engines.release_version import read_release
from hkv.planner.engines.vllm.log import VllmLog
from hkv.planner.engines.vllm.log_budget_terms import blind_config_fields
from hkv.planner.engines.vllm.rules import HISTORY, format_version
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan_config import PlanConfig


def log_release(log: VllmLog, given: Mapping[str, Any]) -> str:
    """The release the log follows: the caller's vllm_version, else the log's own version line."""
    if given.get("vllm_version") is not None:
        return format_version(PlanConfig(vllm_version=given["vllm_version"]).vllm_rules().version)
    if log.version is None:
        raise InvalidInputError("the log prints no vLLM version (no 'Initializing a V1 LLM engine (vX.Y.Z)' or server "
                                "version line): pass --vllm-version", fields=("vllm_version",))
    return read_release(log.version, HISTORY, newer_as_newest=True).release_text


def calibrate_from_log(log: VllmLog, model: ModelSpec, given: Mapping[str, Any], log_name: str) -> Calibration:
    """The log's calibration; InvalidInputError when it lacks what calibration needs (a budget line,
    a device hkv can tell, a version)."""
    version = log_release(log, given)
    fields = blind_config_fields(log, model, given, version)
    if fields.get("gpu") is None and fields.get("gpu_memory_bytes") is None:
        raise InvalidInputError("the log prints no device total hkv can match to a GPU: pass --gpu (hkv gpus lists them)",
                                fields=("gpu",))
    cfg = PlanConfig(**fields)
    memory = log.memory
    logged = LoggedBudget(
        available_kv_gib=float(log.available_kv_gib) if log.available_kv_gib is not None else None,
        weights_gib=memory.weights.bytes / 2**30 if memory.weights is not None else None,
        cuda_graph_est_gib=memory.graph_estimate.bytes / 2**30 if memory.graph_estimate is not None else None,
        requested_memory_gib=memory.requested.bytes / 2**30 if memory.requested is not None else None)
    observation = observe(log_name, log_name, model, cfg, logged)
    return calibrate(observation, log=log_name, model=model.name, gpu=cfg.gpu, vllm_version=version)
