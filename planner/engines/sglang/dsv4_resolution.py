"""DeepSeek-V4 through SGLang 0.5.23's resolution: its argument overrides, DSV4PoolConfigurator's
pools, the user's token cap and max_running_requests (kv_cache_configurator.py
_resolve_memory_pool_config).

SGLang's DeepSeek-V4 overrides (arg_groups/model_overrides/deepseek_v4.py, deepseek_v4_hook.py,
overrides.py _deepseek_v4_kv_cache_dtype) on CUDA: page_size 256 whatever --page-size says,
swa_full_tokens_ratio 0.1 where it was not given, max_running_requests 256 where it was not given
(after the CUDA graph batch was chosen, so that batch stays the card's), an fp8_e4m3 KV cache for
"auto" (bfloat16 allowed, neither changes the V4 page layout's bytes).
"""

from __future__ import annotations

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.sglang.cell_bytes import CellBytes, KvDtype
from hkv.planner.engines.sglang.dsv4_model import dsv4_model
from hkv.planner.engines.sglang.dsv4_pools import Dsv4Pools, Dsv4Sizer
from hkv.planner.engines.sglang.model_view import SglangModel
from hkv.planner.engines.sglang.pool_resolution import SglangResolution, _context_len
from hkv.planner.engines.sglang.pools import SglangPools
from hkv.planner.engines.sglang.rules import SglangRules
from hkv.planner.engines.sglang.running_requests import running_requests
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.errors import InvalidInputError

DSV4_PAGE_SIZE = 256
DSV4_SWA_FULL_TOKENS_RATIO = 0.1
DSV4_MAX_RUNNING_REQUESTS = 256
DSV4_MODELED_FROM = (0, 5, 23)
_KV_DTYPE_BYTES = {"auto": 1, "fp8_e4m3": 1, "bfloat16": 2}  # "auto" resolves to fp8_e4m3


def resolve_dsv4(spec: ModelSpec, args: SglangServerArgs, model: SglangModel, rules: SglangRules,
                 available_bytes: int, mem_fraction_static: float) -> SglangResolution:
    """SGLang's DeepSeek-V4 pools from `available_bytes` (the profiled rest; no state pool)."""
    if rules.version < DSV4_MODELED_FROM:
        raise InvalidInputError(
            f"SGLang {rules.version_text}'s DeepSeek-V4 pools are not modeled (hkv reads 0.5.23's "
            f"DSV4PoolConfigurator); plan with --sglang-version 0.5.23", fields=("sglang_version",))
    if args.speculative_algorithm is not None:
        raise InvalidInputError(
            "speculative decoding with SGLang's DeepSeek-V4 (EAGLE / DSPARK only there) widens its compressor "
            "rings and adds a draft's pools, which hkv does not model; plan without --speculative-algorithm",
            fields=("speculative_algorithm",))
    if args.kv_cache_dtype not in _KV_DTYPE_BYTES:
        raise InvalidInputError(f"kv_cache_dtype: SGLang serves DeepSeek-V4 with fp8_e4m3 or bfloat16, got "
                                f"{args.kv_cache_dtype!r}", fields=("kv_cache_dtype",))
    context_len = _context_len(spec, model, args)
    # SGLang's own default is None, which its DeepSeek-V4 override reads as "not given".
    ratio = DSV4_SWA_FULL_TOKENS_RATIO if args.swa_full_tokens_ratio is None else args.swa_full_tokens_ratio
    requested = args.max_running_requests if args.max_running_requests is not None else DSV4_MAX_RUNNING_REQUESTS
    sizer = Dsv4Sizer(dsv4_model(spec), DSV4_PAGE_SIZE, ratio, max(1, requested))
    from_budget = sizer.sizes(sizer.full_tokens(available_bytes))
    sizes = from_budget
    if args.max_total_tokens is not None and args.max_total_tokens < from_budget.full:
        sizes = sizer.sizes(args.max_total_tokens)  # calculate_pool_sizes_from_max_tokens: no bias re-subtracted
    running = running_requests(sizes.full, context_len, requested, token_cap=rules.requested_running_token_cap,
                               mamba_cap=None)
    pools = SglangPools(
        mem_fraction_static=mem_fraction_static, available_bytes=available_bytes, max_total_num_tokens=sizes.full,
        swa_tokens=sizes.swa, max_mamba_cache_size=None, max_running_requests=running.max_running_requests,
        context_len=context_len, page_size=DSV4_PAGE_SIZE)
    dsv4 = Dsv4Pools(sizer, from_budget, sizes, sizer.c128_state_rows(running.max_running_requests))
    # SGLang sizes DeepSeek-V4 by its coefficient, not by per-layer cells: the cell is left empty.
    return SglangResolution(pools, args, model, rules, KvDtype(_KV_DTYPE_BYTES[args.kv_cache_dtype]),
                            CellBytes(0, 0, 0, 0, 0), None, running, available_bytes, dsv4=dsv4)
