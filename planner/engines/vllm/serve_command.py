"""The `vllm serve` command that realizes a plan's vllm layout (`hkv plan --emit vllm`).

Flag names are vLLM 0.33's, the same as 0.32's for every flag used here (vllm/engine/arg_utils.py,
EngineArgs.add_cli_args, and the value types of vllm/config/cache.py and model.py). Flags whose
vLLM default already is the plan's are left out, except the memory budget, max_num_batched_tokens
and max_num_seqs: vLLM's own defaults for those (gpu_memory_utilization 0.92, max_num_seqs 1024 on
an H100) are not what hkv plans with, and they set the capacity the plan predicts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import PurePath

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.memory_budget import does_not_fit_error
from hkv.planner.engines.vllm.layout import vllm_prefix_caching
from hkv.planner.engines.vllm.serve_env import serve_env
from hkv.planner.errors import DoesNotFitError, InvalidInputError, LayoutUnavailableError
from hkv.planner.plan import Plan

FLAGS_VLLM_VERSION = "0.33.0"  # the release whose flag names the command uses
EAGLE_DRAFT_PLACEHOLDER = "EAGLE_DRAFT_MODEL"
# hkv dtype names -> vLLM's names (ModelDType / MambaDType: auto, float16, bfloat16, float32); fp8 has none.
_VLLM_FLOAT_NAMES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
                     "half": "float16", "float32": "float32", "fp32": "float32", "float": "float32"}


@dataclass(frozen=True)
class ServeCommand:
    argv: tuple[str, ...]  # ("vllm", "serve", MODEL, "--flag", "value", ...)
    env: dict[str, str]  # set for the command only
    notes: tuple[str, ...]  # one line each: why an env var or a flag's value is there


def build_vllm_serve_command(plan: Plan) -> ServeCommand:
    """The command for `plan`'s "vllm" layout report. Pure. Raises LayoutUnavailableError when the
    plan has no vllm layout, DoesNotFitError when vLLM would refuse to start (the weights do not
    fit, or one max-length request does not fit the layout), InvalidInputError for a dtype vLLM has
    no name for (fp8 weights or SSM state)."""
    model, cfg, budget = plan.model, plan.config, plan.budget
    if "vllm" not in plan.reports:
        raise LayoutUnavailableError(f"emit vllm: the vllm layout does not apply ({plan.skipped['vllm']})",
                                     fields=("emit",))
    if not budget.fits:
        err = does_not_fit_error(model, budget)
        raise DoesNotFitError(f"emit vllm: {err}", fields=("emit", *err.fields))
    capacity = plan.reports["vllm"].capacity
    if capacity.max_num_requests == 0:
        raise DoesNotFitError(
            f"emit vllm: one request of {capacity.max_model_len:,} tokens does not fit the vllm layout "
            f"(the longest that fits is {capacity.max_context_len:,} tokens) and vLLM would refuse to start; "
            "lower max_model_len", fields=("emit", "max_model_len"))
    env = serve_env(plan)
    notes = [f"{s.name}={s.value}: {s.why}" for s in env]
    flags: list[str] = ["--max-model-len", str(capacity.max_model_len)]
    if cfg.tp > 1:
        flags += ["--tensor-parallel-size", str(cfg.tp)]
    if cfg.pp > 1:
        flags += ["--pipeline-parallel-size", str(cfg.pp)]
    if cfg.dtype != "auto":
        flags += ["--dtype", _vllm_float("dtype", cfg.dtype)]
    if cfg.kv_cache_dtype != "auto":
        flags += ["--kv-cache-dtype", cfg.kv_cache_dtype]
    if plan.block is not None and plan.block.block_size != plan.block.default_block_size:
        flags += ["--block-size", str(cfg.block_size)]  # vLLM picks the default one by itself
    if budget.exact:
        flags += ["--kv-cache-memory-bytes", str(budget.available_bytes)]
    else:
        flags += ["--gpu-memory-utilization", f"{cfg.utilization():g}"]
        if cfg.gpu_memory_bytes is not None:
            notes.append("planned for a GPU memory size given by hand; vLLM measures the device's own")
    flags += ["--max-num-batched-tokens", str(budget.max_num_batched_tokens)]
    flags += ["--max-num-seqs", str(_max_num_seqs(plan, notes))]
    flags += _prefix_caching_flag(plan)
    if cfg.mamba_ssm_dtype != "auto":
        flags += ["--mamba-ssm-cache-dtype", _vllm_float("mamba_ssm_dtype", cfg.mamba_ssm_dtype)]
    if cfg.speculative_tokens:
        flags += ["--speculative-config", json.dumps(_speculative_config(plan, notes))]
    if cfg.vllm_rules().name != FLAGS_VLLM_VERSION:
        notes.append(f"flags are vLLM {FLAGS_VLLM_VERSION}'s; the plan follows vLLM {cfg.vllm_rules().name}, "
                     "whose flags may differ")
    argv = ("vllm", "serve", served_model(plan), *flags)
    return ServeCommand(argv, {s.name: s.value for s in env}, tuple(notes))


def served_model(plan: Plan) -> str:
    """What `vllm serve` loads: `model_reference(plan.model)`."""
    return model_reference(plan.model)


def model_reference(model: ModelSpec) -> str:
    """What an engine loads (vLLM's model, SGLang's --model-path): the HF id of a catalog, HF-cache or
    Hub spec; the local path that was given otherwise (a config file's folder: engines load folders),
    "./"-prefixed when relative."""
    if not model.source or model.source.startswith(("catalog:", "hf-cache:", "hub:")):
        return model.model_id or model.name
    path = PurePath(model.source)
    path = path.parent if path.suffix == ".json" else path
    text = str(path)
    return text if path.is_absolute() or text.startswith(".") else f"./{text}"


def _max_num_seqs(plan: Plan, notes: list[str]) -> int:
    """The vllm layout's sustained concurrency when known (> 0) and below the plan's max_num_seqs:
    more max-length requests at once would be preempted."""
    capacity, cap = plan.reports["vllm"].capacity, plan.budget.max_num_seqs
    if not 0 < capacity.sustained_concurrency < cap:
        return cap
    notes.append(f"--max-num-seqs {capacity.sustained_concurrency}: the vllm layout's sustained concurrency "
                 f"for {capacity.max_model_len:,}-token requests (more are preempted); shorter requests "
                 f"could run more at once (the plan's max_num_seqs is {cap})")
    return capacity.sustained_concurrency


def _prefix_caching_flag(plan: Plan) -> list[str]:
    """The flag only where the plan's choice differs from the release's default for the model."""
    chosen = vllm_prefix_caching(plan.model, plan.config)
    default = vllm_prefix_caching(plan.model, replace(plan.config, enable_prefix_caching=None))
    if chosen == default:
        return []
    return ["--enable-prefix-caching" if chosen else "--no-enable-prefix-caching"]


def _speculative_config(plan: Plan, notes: list[str]) -> dict[str, object]:
    """EAGLE draft layers -> "eagle" (the draft checkpoint is the user's: a placeholder); the
    config's MTP layers -> "mtp" (vLLM maps it to the model's own MTP class); neither -> "ngram",
    a draft method that adds no KV cache layers, as the plan assumes."""
    cfg, tokens = plan.config, plan.config.speculative_tokens
    if cfg.draft_layers:
        notes.append(f"replace {EAGLE_DRAFT_PLACEHOLDER} with the EAGLE draft checkpoint; the plan gives it "
                     f"{cfg.draft_layers} full-attention layer(s)")
        return {"method": "eagle", "model": EAGLE_DRAFT_PLACEHOLDER, "num_speculative_tokens": tokens}
    if plan.model.draft_layers:
        return {"method": "mtp", "num_speculative_tokens": tokens}
    notes.append(f"hkv reads no MTP layers in {plan.model.name}'s config: ngram drafting adds no KV cache "
                 "layers, as planned")
    return {"method": "ngram", "num_speculative_tokens": tokens}


def _vllm_float(field: str, name: str) -> str:
    key = name.strip().lower()
    if key not in _VLLM_FLOAT_NAMES:
        raise InvalidInputError(f"emit vllm: {field} {name} has no vLLM name (vLLM takes float16, bfloat16 "
                                "or float32 here)", fields=("emit", field))
    return _VLLM_FLOAT_NAMES[key]
