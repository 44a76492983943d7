"""`hkv plan --engine vllm,sglang` and the SGLang options: which engines to plan for, and the
SGLang server arguments the plan options map to.

hkv's plan options speak vLLM; SGLang takes the same meaning where one exists: --tp, --pp,
--max-model-len (SGLang's --context-length), --max-num-seqs (--max-running-requests), --dtype,
--kv-cache-dtype (fp8 = SGLang's fp8_e4m3), --mamba-ssm-dtype. vLLM-only options (block size,
max_num_batched_tokens, utilization, ...) do not change the SGLang plan.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from hkv.cli.errors import UserError
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.engines.log_engine import LOG_ENGINES, SGLANG, VLLM
from hkv.planner.engines.sglang.default_release import DEFAULT_SGLANG_VERSION
from hkv.planner.engines.vllm.rules import read_vllm_version
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan_config import DEFAULT_GPU, PlanConfig
from hkv.planner.sizes import format_gib

if TYPE_CHECKING:
    from hkv.planner.engines.sglang.server_args import SglangServerArgs

# SGLang's rules and server arguments are imported where an SGLang option is read: a vLLM-only
# plan (the default) has no use for them.

ENGINES = LOG_ENGINES  # the engines hkv plans for: vllm, sglang

EngineOpt = Annotated[str | None, typer.Option(
    "--engine", help=f"engines to plan for, comma-separated ({', '.join(ENGINES)}): one table of each engine's KV "
                     "tokens, logged capacity, sustained concurrency and max running requests "
                     "[default: vllm, the full vLLM plan]")]
SglangVersionOpt = Annotated[str | None, typer.Option(
    "--sglang-version", help=f"the SGLang release whose pool sizing the sglang engine follows "
                             f"[default: {DEFAULT_SGLANG_VERSION}]")]
MemFractionOpt = Annotated[float | None, typer.Option(
    "--mem-fraction-static", help="SGLang's --mem-fraction-static [default: SGLang's, from the GPU's memory and "
                                  "the server arguments]")]
_KV_DTYPES = {"auto": "auto", "fp8": "fp8_e4m3"}
_FLOAT_NAMES = {"float32": "float32", "fp32": "float32", "float": "float32", "bfloat16": "bfloat16",
               "bf16": "bfloat16", "float16": "float16", "fp16": "float16", "half": "float16"}


def parse_engines(text: str | None) -> tuple[str, ...]:
    """"vllm,sglang" -> ("vllm", "sglang"); None -> ("vllm",). InvalidInputError for an unknown
    name or a repeated one."""
    if text is None:
        return (VLLM,)
    names = tuple(part.strip().lower() for part in text.split(","))
    unknown = [name for name in names if name not in ENGINES]
    if unknown or not all(names):
        raise InvalidInputError(f"engine must be a comma-separated list of {', '.join(ENGINES)}, got {text!r}",
                                fields=("engine",))
    if len(set(names)) != len(names):
        raise InvalidInputError(f"engine names {text!r} twice; give each engine once", fields=("engine",))
    return names


def uses_engines(engines: tuple[str, ...], emit: Enum | None) -> bool:
    """Whether `hkv plan` leaves its vLLM-only path: another engine asked for, or --emit sglang."""
    return engines != (VLLM,) or (emit is not None and emit.value == SGLANG)


def sglang_server_args(cfg: PlanConfig, version: str | None, mem_fraction_static: float | None,
                       max_num_seqs_given: int | None) -> SglangServerArgs:
    """The SGLang arguments that mean what the plan options say (module docstring)."""
    from hkv.planner.engines.sglang.server_args import SglangServerArgs

    fields = {"tp": cfg.tp, "pp": cfg.pp, "max_model_len": cfg.max_model_len, "max_num_seqs": max_num_seqs_given,
              "kv_cache_dtype": cfg.kv_cache_dtype, "mamba_ssm_dtype": cfg.mamba_ssm_dtype, "dtype": cfg.dtype}
    return SglangServerArgs(**sglang_given(fields, version, mem_fraction_static))


def _float_name(field: str, name: str) -> str:
    """hkv's dtype name -> SGLang's ("auto" stays)."""
    key = name.strip().lower()
    if key == "auto":
        return key
    if key not in _FLOAT_NAMES:
        raise InvalidInputError(f"{field} {name} has no SGLang name (SGLang takes auto, float32, bfloat16 or "
                                "float16)", fields=(field,))
    return _FLOAT_NAMES[key]


def sglang_given(cfg_fields: dict[str, Any], version: str | None, mem_fraction_static: float | None
                 ) -> dict[str, Any]:
    """SglangServerArgs fields for the PlanConfig fields a user set (`explain-log`'s options:
    tensor_parallel... by PlanConfig name), the SGLang version and fraction given."""
    given: dict[str, Any] = {}
    for field, value in cfg_fields.items():
        if field in _GIVEN_FIELDS:
            name = _GIVEN_FIELDS[field]
            given[name] = _given_value(name, value)
    if version is not None:
        from hkv.planner.engines.sglang.rules import read_sglang_version

        given["version"] = read_sglang_version(version).release_text
    if mem_fraction_static is not None:
        given["mem_fraction_static"] = _fraction(mem_fraction_static)
    return given


# PlanConfig field -> SglangServerArgs field, for the options with an SGLang meaning (module docstring).
_GIVEN_FIELDS = {"tp": "tp_size", "pp": "pp_size", "max_model_len": "context_length",
                 "max_num_seqs": "max_running_requests", "kv_cache_dtype": "kv_cache_dtype",
                 "mamba_ssm_dtype": "mamba_ssm_dtype", "dtype": "dtype"}


def _given_value(name: str, value: Any) -> Any:
    if name == "kv_cache_dtype":
        return _KV_DTYPES[value]
    if name in ("mamba_ssm_dtype", "dtype"):
        text = _float_name(name, value)
        return None if name == "mamba_ssm_dtype" and text == "auto" else text  # None: the config's
    return value


def version_notes(vllm_version: str | None, sglang_version: str | None = None) -> list[str]:
    """The stderr lines saying which release a pasted --vllm-version / --sglang-version was read as
    ("vLLM 0.16.1rc1.dev265+g1a2b3c4 read as release 0.16.0 (dev build)"); none for a plain release.
    InvalidInputError for text that is not a version of a release hkv models."""
    readings = [("vLLM", read_vllm_version(vllm_version))] if vllm_version is not None else []
    if sglang_version is not None:
        from hkv.planner.engines.sglang.rules import read_sglang_version

        readings.append(("SGLang", read_sglang_version(sglang_version)))
    return [line for engine, reading in readings if (line := reading.note(engine)) is not None]


def _fraction(value: float) -> float:
    if not 0 < value < 1:
        raise InvalidInputError(f"mem_fraction_static must be between 0 and 1, got {value}",
                                fields=("mem_fraction_static",))
    return value


def gpu_assumed(gpu: str | None, gpu_memory: str | None) -> dict[str, Any]:
    """The GPU planned for when neither --gpu nor --gpu-memory was given ({} otherwise): the JSON
    "assumed" object of the engine plans (vLLM's own plan adds its max_num_batched_tokens)."""
    if gpu is not None or gpu_memory is not None or DEFAULT_GPU is None:
        return {}
    return {"gpu": DEFAULT_GPU, "gpu_total_bytes": get_gpu(DEFAULT_GPU).total_bytes}


def gpu_assumed_note(assumed: dict[str, Any]) -> str | None:
    if not assumed:
        return None
    return (f"no --gpu given: planned for {assumed['gpu']} ({format_gib(assumed['gpu_total_bytes'])}); pass --gpu "
            "NAME or --gpu-memory SIZE to choose")


def refuse_sglang_options_for_vllm(sglang_version: str | None, mem_fraction_static: float | None, where: str) -> None:
    """UserError when SGLang's own options are given where only vLLM is planned (they would change
    nothing)."""
    given = [flag for flag, value in (("--sglang-version", sglang_version),
                                      ("--mem-fraction-static", mem_fraction_static)) if value is not None]
    if given:
        raise UserError(f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} to SGLang only; {where}")
