"""From the profiled rest to SGLang's pools: the state pool first, then the KV pools from what is
left, then max_running_requests (kv_cache_configurator.py _resolve_memory_pool_config)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.sglang.architectures import DSV4_ARCHITECTURES
from hkv.planner.engines.sglang.checkpoint_kv_dtype import resolve_auto_kv_cache_dtype
from hkv.planner.engines.sglang.cell_bytes import CellBytes, KvDtype, cell_bytes, kv_dtype
from hkv.planner.engines.sglang.config_extras import SglangConfigExtras
from hkv.planner.engines.sglang.dsv4_pools import Dsv4Pools
from hkv.planner.engines.sglang.mamba_pool import GIB, MambaPool, mamba_pool
from hkv.planner.engines.sglang.mamba_state import mamba_state, slots_per_request
from hkv.planner.engines.sglang.minimax_sparse_pool import minimax_sparse_page_size
from hkv.planner.engines.sglang.model_view import SglangModel, sglang_model
from hkv.planner.engines.sglang.page_size import default_page_size
from hkv.planner.engines.sglang.pools import SglangPools
from hkv.planner.engines.sglang.rules import SglangRules, for_sglang_version
from hkv.planner.engines.sglang.running_requests import RunningRequests, running_requests
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.engines.sglang.token_pools import (
    SwaSplit,
    TokenPools,
    capped_swa_pools,
    hybrid_swa_pools,
    one_pool,
    page_floor,
    swa_request_cap_tokens,
)
from hkv.planner.errors import DoesNotFitError, InvalidInputError

HOPPER = (9, 0)
DEFAULT_CHUNKED_PREFILL_SIZE = 8192  # the 60-160 GiB tier, when neither the card nor the user says
SPECULATIVE_MAX_RUNNING_REQUESTS = 48
DRAFTLESS_ALGORITHMS = frozenset({"NGRAM"})  # speculative decoding with no draft model (no draft KV layers)


@dataclass(frozen=True)
class SglangResolution:
    """SGLang's pools and what they were computed from (for the start-up lines)."""

    pools: SglangPools
    args: SglangServerArgs
    model: SglangModel
    rules: SglangRules
    kv_dtype: KvDtype
    cell: CellBytes
    mamba: MambaPool | None
    running: RunningRequests
    kv_bytes: int  # the bytes the KV pools were sized from (after the state pool)
    dsv4: Dsv4Pools | None = None  # DeepSeek-V4's pools (dsv4_resolution.py), else None


def resolve_pools(spec: ModelSpec, args: SglangServerArgs, available_bytes: int, mem_fraction_static: float, *,
                  extras: SglangConfigExtras | None = None, compute_capability: tuple[int, int] = HOPPER,
                  chunked_prefill_size: int | None = None) -> SglangPools:
    """SGLang's pools from `available_bytes`, the profiled rest before the state pool."""
    return resolve(spec, args, available_bytes, mem_fraction_static, extras=extras,
                   compute_capability=compute_capability, chunked_prefill_size=chunked_prefill_size).pools


def resolve(spec: ModelSpec, args: SglangServerArgs, available_bytes: int, mem_fraction_static: float, *,
            extras: SglangConfigExtras | None = None, compute_capability: tuple[int, int] = HOPPER,
            chunked_prefill_size: int | None = None) -> SglangResolution:
    """`resolve_pools` with the figures behind it. `chunked_prefill_size`: the resolved value (the
    card's tier); only the request-capped sliding pool reads it."""
    rules = for_sglang_version(args.version)
    model = sglang_model(spec, extras, disable_hybrid_swa_memory=args.disable_hybrid_swa_memory)
    _check_supported(model, args, rules)
    if model.architecture in DSV4_ARCHITECTURES:
        from hkv.planner.engines.sglang.dsv4_resolution import resolve_dsv4  # it builds on SglangResolution

        return resolve_dsv4(spec, args, model, rules, available_bytes, mem_fraction_static)
    if args.speculative_algorithm is not None and args.max_running_requests is None:
        # arg_groups/speculative_hook.py: "Max running requests is reset to 48 for speculative decoding"
        args = replace(args, max_running_requests=SPECULATIVE_MAX_RUNNING_REQUESTS)
    context_len = _context_len(spec, model, args)
    page_size = args.page_size if args.page_size is not None else (
        minimax_sparse_page_size(compute_capability) if model.sparse_indexer
        else default_page_size(model, compute_capability))
    if (model.recurrent and model.mamba_radix and not args.disable_radix_cache and page_size > 1
            and not (model.mamba_extra_buffer and rules.mamba_auto_extra_buffer)):
        raise InvalidInputError(
            f"{model.architecture}: SGLang's no_buffer recurrent radix cache supports page_size 1 only "
            f"(validate_mamba_no_buffer); drop --page-size {page_size} or pass --disable-radix-cache",
            fields=("page_size", "disable_radix_cache"))
    kv_cache_dtype = args.kv_cache_dtype if model.is_dsa else resolve_auto_kv_cache_dtype(
        args.kv_cache_dtype, spec.quantization_config, compressed_tensors_kv=rules.compressed_tensors_kv_auto)
    dtype = kv_dtype(model, kv_cache_dtype, spec.dtype_bytes, compute_capability)
    cell = cell_bytes(model, args.tp_size, dtype)
    state = mamba_state(model, args.tp_size, args.mamba_ssm_dtype)
    pool = None
    kv_bytes = available_bytes
    if state is not None:
        overlap = args.pp_size == 1  # PP turns the overlap scheduler off
        slots = slots_per_request(model, args.disable_radix_cache, overlap, page_size,
                                  auto_extra_buffer=rules.mamba_auto_extra_buffer)
        pool = mamba_pool(state, args, rules, available_bytes / GIB, slots)
        kv_bytes = int(pool.rest_gib * GIB)
    if kv_bytes <= 0:
        raise DoesNotFitError(
            f"SGLang leaves no memory for the KV cache ({kv_bytes / GIB:.2f} GiB) at mem_fraction_static "
            f"{mem_fraction_static}; raise --mem-fraction-static or use more GPUs",
            fields=("mem_fraction_static", "tp"))
    tokens = _token_pools(model, args, rules, cell, kv_bytes, page_size, context_len,
                          chunked_prefill_size or args.chunked_prefill_size or DEFAULT_CHUNKED_PREFILL_SIZE)
    if tokens.full <= 0:
        raise DoesNotFitError(
            f"SGLang's KV pool gets no token: {kv_bytes / GIB:.2f} GiB for {cell.full:,} bytes a token; raise "
            f"--mem-fraction-static (now {mem_fraction_static}) or use more GPUs",
            fields=("mem_fraction_static", "tp"))
    running = running_requests(tokens.full, context_len, args.max_running_requests,
                               token_cap=rules.requested_running_token_cap,
                               mamba_cap=pool.running_cap if pool is not None else None)
    pools = SglangPools(
        mem_fraction_static=mem_fraction_static, available_bytes=available_bytes,
        max_total_num_tokens=tokens.full, swa_tokens=tokens.swa,
        max_mamba_cache_size=pool.slots if pool is not None else None,
        max_running_requests=running.max_running_requests, context_len=context_len, page_size=page_size)
    return SglangResolution(pools, args, model, rules, dtype, cell, pool, running, kv_bytes)


def _check_supported(model: SglangModel, args: SglangServerArgs, rules: SglangRules) -> None:
    if args.pp_size > 1:
        raise InvalidInputError(
            "hkv sizes SGLang's pools at pp_size 1 only (with PP each stage sizes its own layers and all take the "
            "smallest stage's token count); plan SGLang with --tp", fields=("pp_size",))
    if model.hybrid_swa and model.recurrent:
        raise InvalidInputError(f"{model.architecture}: hkv does not size SGLang's pools for sliding and "
                                f"recurrent layers together", fields=("model",))
    if args.speculative_algorithm is not None and args.speculative_algorithm.upper() not in DRAFTLESS_ALGORITHMS:
        raise InvalidInputError(
            f"speculative_algorithm {args.speculative_algorithm}: hkv sizes SGLang's speculative decoding without a "
            f"draft model only (NGRAM); EAGLE / NEXTN / STANDALONE drafts add their own KV layers to every token's "
            f"cell, which hkv does not model", fields=("speculative_algorithm",))
    if args.speculative_algorithm is not None and model.recurrent and not rules.mamba_padding_slot:
        raise InvalidInputError(
            f"speculative decoding on hybrid recurrent models is modeled from SGLang 0.5.17; got {args.version}",
            fields=("sglang_version", "speculative_algorithm"))


def _context_len(spec: ModelSpec, model: SglangModel, args: SglangServerArgs) -> int:
    if args.context_length is None:
        return model.context_len
    if args.context_length > model.context_len:
        raise InvalidInputError(
            f"context_length {args.context_length:,} exceeds {spec.name}'s {model.context_len:,}; SGLang refuses it "
            f"unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", fields=("context_length",))
    return args.context_length


def _token_pools(model: SglangModel, args: SglangServerArgs, rules: SglangRules, cell: CellBytes, kv_bytes: int,
                 page_size: int, context_len: int, chunked_prefill_size: int) -> TokenPools:
    user_cap = args.max_total_tokens
    if not model.hybrid_swa:
        pools = one_pool(kv_bytes, cell, page_size, zero_cell_tokens=user_cap or context_len)
        return pools if user_cap is None else TokenPools(page_floor(min(pools.full, user_cap), page_size), None)
    cap_tokens = None
    if (rules.swa_request_cap_pool and args.max_running_requests is not None and args.disable_radix_cache
            and chunked_prefill_size > 0 and model.sliding_window is not None and cell.full_layers > 0):
        cap_tokens = swa_request_cap_tokens(model.sliding_window, page_size, args.max_running_requests,
                                            chunked_prefill_size)
    split = SwaSplit(args.swa_ratio_or_default, rules.swa_ratio_cell,
                     model.sliding_window if rules.swa_admission_floor else None, cap_tokens)
    if user_cap is not None and not rules.swa_ratio_cell:
        # Before 0.5.11 the user's cap bounded the undivided tokens, which were then split.
        both = cell.full + cell.swa
        capped = page_floor(min(kv_bytes // both, user_cap), page_size)
        return hybrid_swa_pools(capped * both, cell, page_size, split)
    pools = hybrid_swa_pools(kv_bytes, cell, page_size, split)
    if user_cap is None or user_cap >= pools.full:
        return pools
    if cap_tokens is not None:
        return TokenPools(page_floor(user_cap, page_size), min(pools.swa or 0, user_cap))
    return capped_swa_pools(user_cap, page_size, split)
