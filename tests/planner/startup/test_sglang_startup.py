"""SGLang's start-up verdicts: the state pool's cap on max_running_requests (SGLang's own warning,
srt/mem_cache/kv_cache_configurator.py, 0.5.17+) and the pool split."""

from __future__ import annotations

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.plan import plan_sglang
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.errors import DoesNotFitError
from hkv.planner.startup import sglang_refusal, sglang_startup

GIB = 2**30


def test_capped_by_the_state_pool_prints_sglangs_warning():
    planned = plan_sglang(load_model_spec("nemotron-3-nano-30b-a3b"), SglangServerArgs(context_length=32768), gpu="h100")
    v = sglang_startup(planned)
    assert v.starts
    cap = next(w for w in v.warnings if w.code == "max_running_requests_capped_by_mamba")
    slots, per_request = planned.resolution.mamba.slots, planned.resolution.mamba.slots_per_request
    # kv_cache_configurator.py: mamba_cap = max_mamba_cache_size // ratio
    assert planned.pools.max_running_requests == slots // per_request
    assert cap.message == (
        f"max_running_requests is capped to {slots // per_request} by the mamba state cache (max_mamba_cache_size="
        f"{slots}, {per_request} state slots per request). To raise it: increase --mamba-full-memory-ratio or "
        "--max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16.")
    assert cap.releases == "SGLang 0.5.17+"
    split = next(w for w in v.warnings if w.code == "mamba_pool_split")
    assert split.message.startswith(f"Mamba Cache is allocated. max_mamba_cache_size: {slots}, ")
    assert "0.9 gives the state pool 47%" in split.detail  # 0.9 / 1.9


def test_given_state_pool_is_no_split_and_a_generous_one_no_cap():
    model = load_model_spec("nemotron-3-nano-30b-a3b")
    planned = plan_sglang(model, SglangServerArgs(context_length=32768, max_mamba_cache_size=20, max_running_requests=4),
                          gpu="h100")
    assert sglang_startup(planned).warnings == ()  # 4 requests x 5 slots = 20: not capped, no ratio split


def test_refusal_is_an_error_with_its_fix():
    try:
        plan_sglang(load_model_spec("llama-3.1-8b-instruct"), SglangServerArgs(), gpu=None, gpu_memory_bytes=16 * GIB,
                    weights_bytes=16 * GIB)
    except DoesNotFitError as err:
        v = sglang_refusal(err, "0.5.23")
    assert not v.starts and v.errors[0].code == "no_memory" and "--mem-fraction-static" in v.errors[0].fix
