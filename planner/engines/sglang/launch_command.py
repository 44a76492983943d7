"""The `python -m sglang.launch_server` command that realizes an SGLang plan (`hkv plan --emit sglang`).

Flag names are SGLang 0.5.23's (srt/arg_groups/fields/*.py: each field's `--field-name`, and the
aliases it declares). `--mem-fraction-static` is always given: SGLang's own default depends on the
card's memory, the chunked prefill size, the CUDA graph batch and model-specific adjustments, and it
sets every pool the plan predicts. Other flags appear only where the plan's server arguments differ
from SGLang's defaults (SglangServerArgs holds those defaults). `sglang serve` takes the same flags.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.sglang.pools import SglangPools
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.errors import DoesNotFitError

PROGRAM = ("python3", "-m", "sglang.launch_server")
FLAGS_SGLANG_VERSION = "0.5.23"  # the release whose flag names the command uses
EAGLE_DRAFT_PLACEHOLDER = "EAGLE_DRAFT_MODEL"
# hkv's KV cache dtype names -> SGLang's --kv-cache-dtype choices (fp8 is E4M3, as vLLM's "fp8").
_KV_DTYPE_NAMES = {"fp8": "fp8_e4m3"}
# SglangServerArgs field -> SGLang 0.5.23's flag, in the order they are written. Only these become
# flags (a field hkv adds for its own use never turns into an unknown flag).
_FLAGS = (
    ("tp_size", "--tp-size"), ("pp_size", "--pp-size"), ("dtype", "--dtype"), ("kv_cache_dtype", "--kv-cache-dtype"),
    ("context_length", "--context-length"), ("chunked_prefill_size", "--chunked-prefill-size"),
    ("cuda_graph_max_bs", "--cuda-graph-max-bs-decode"),  # 0.5.23 splits --cuda-graph-max-bs by phase
    ("page_size", "--page-size"), ("max_total_tokens", "--max-total-tokens"),
    ("max_running_requests", "--max-running-requests"), ("swa_full_tokens_ratio", "--swa-full-tokens-ratio"),
    ("disable_hybrid_swa_memory", "--disable-hybrid-swa-memory"),
    ("mamba_full_memory_ratio", "--mamba-full-memory-ratio"), ("max_mamba_cache_size", "--max-mamba-cache-size"),
    ("mamba_ssm_dtype", "--mamba-ssm-dtype"), ("disable_radix_cache", "--disable-radix-cache"),
    ("speculative_num_steps", "--speculative-num-steps"), ("speculative_eagle_topk", "--speculative-eagle-topk"),
    ("speculative_num_draft_tokens", "--speculative-num-draft-tokens"),
)
_DEFAULTS = SglangServerArgs()


@dataclass(frozen=True)
class LaunchCommand:
    argv: tuple[str, ...]  # ("python3", "-m", "sglang.launch_server", "--model-path", MODEL, "--flag", ...)
    env: dict[str, str]  # set for the command only (none needed so far)
    notes: tuple[str, ...]  # one line each: why a flag's value is there


def build_sglang_launch_command(model_path: str, args: SglangServerArgs, pools: SglangPools) -> LaunchCommand:
    """The command that starts SGLang with `args` and the resolved `pools` (its mem_fraction_static).
    Pure. Raises DoesNotFitError when SGLang would refuse to start: no token or request fits."""
    if pools.max_total_num_tokens <= 0 or pools.max_running_requests <= 0:
        raise DoesNotFitError(
            f"emit sglang: SGLang would refuse to start: {pools.max_total_num_tokens:,} KV cache tokens and "
            f"{pools.max_running_requests} running requests fit at mem_fraction_static "
            f"{pools.mem_fraction_static!r}; use more GPUs (--tp) or a larger card", fields=("emit", "tp"))
    notes = [f"--mem-fraction-static {pools.mem_fraction_static!r}: the fraction the plan's pools come from "
             f"(SGLang would choose its own from the card and the other flags)",
             f"`sglang serve` takes the same flags; flag names are SGLang {FLAGS_SGLANG_VERSION}'s"]
    if pools.max_total_num_tokens < pools.context_len:
        # tp_worker.py warns and serves: requests past the pool are refused or truncated.
        notes.append(f"the KV pool holds {pools.max_total_num_tokens:,} tokens, fewer than the context length "
                     f"{pools.context_len:,}: SGLang starts but refuses or truncates requests longer than "
                     f"{pools.max_total_num_tokens - 6:,} input tokens; lower --context-length or use more GPUs")
    flags = ["--model-path", model_path, "--mem-fraction-static", repr(pools.mem_fraction_static)]
    if args.speculative_algorithm is not None:
        flags += ["--speculative-algorithm", args.speculative_algorithm]
        if args.speculative_algorithm.upper().startswith("EAGLE"):
            flags += ["--speculative-draft-model-path", EAGLE_DRAFT_PLACEHOLDER]
            notes.append(f"replace {EAGLE_DRAFT_PLACEHOLDER} with the EAGLE draft checkpoint")
    for name, flag in _FLAGS:
        value = getattr(args, name)
        if value != getattr(_DEFAULTS, name):
            flags += _flag(name, flag, value)
    if args.version != FLAGS_SGLANG_VERSION:
        notes.append(f"flags are SGLang {FLAGS_SGLANG_VERSION}'s; the plan follows SGLang {args.version}, whose "
                     "flags may differ")
    return LaunchCommand((*PROGRAM, *flags), {}, tuple(notes))


def _flag(name: str, flag: str, value: object) -> list[str]:
    """A boolean field is a store_true flag (only True differs from SGLang's default False)."""
    if isinstance(value, bool):
        return [flag] if value else []
    if name == "kv_cache_dtype":
        value = _KV_DTYPE_NAMES.get(str(value), value)
    return [flag, repr(value) if isinstance(value, float) else str(value)]  # repr: the shortest exact text
