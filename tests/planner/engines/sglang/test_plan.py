"""plan_sglang: SGLang's budget (rest = free after weights - free before load x (1 - mfs)) feeding its
pools, worked by hand, and the one-line refusals."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.budget_term import BudgetTerm
from hkv.planner.engines.sglang.budget import SglangBudget
from hkv.planner.engines.sglang.plan import plan_sglang
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.errors import DoesNotFitError, InvalidInputError

GIB = 2**30


def test_budget_from_measured_free_memory() -> None:
    # Llama-3.1-8B on H100 (default mfs 0.83, see test_mem_fraction), 79 GiB free before loading, 15 GiB
    # of weights: rest = 64 - 79 x 0.17 = 50.57 GiB = 54,299,124,039.7 B; / 131,072 B = 414,269.4 -> 414,269
    # (131,072 x 414,269 = 54,299,066,368, 57,671 B short of the rest)
    planned = plan_sglang(load_model_spec("llama-3.1-8b-instruct"), SglangServerArgs(), gpu="h100",
                          free_before_load_bytes=79 * GIB, weights_bytes=15 * GIB)
    assert planned.pools.mem_fraction_static == 0.83
    assert planned.pools.available_bytes == pytest.approx(54_299_124_039, abs=2)
    assert planned.pools.max_total_num_tokens == 414269
    assert planned.pools.max_running_requests == 2048
    assert planned.chunked_prefill_size == 8192 and planned.cuda_graph_max_bs == 256
    assert planned.to_json()["pools"] == planned.pools.to_json()


def test_given_mem_fraction_static() -> None:
    # mfs 0.9: rest = 64 - 79 x 0.1 = 56.1 GiB = 60,236,916,326.4 B; / 131,072 = 459,571.2 -> 459,571
    # (131,072 x 459,571 = 60,236,890,112)
    planned = plan_sglang(load_model_spec("llama-3.1-8b-instruct"), SglangServerArgs(mem_fraction_static=0.9),
                          gpu="h100", free_before_load_bytes=79 * GIB, weights_bytes=15 * GIB)
    assert planned.pools.max_total_num_tokens == 459571


def test_weights_leave_nothing() -> None:
    # 79 x 0.83 = 65.57 GiB static; 70 GiB of weights leave none: at least 1 - 9 / 79 = 0.886
    with pytest.raises(DoesNotFitError, match="at least 0.886"):
        plan_sglang(load_model_spec("llama-3.1-8b-instruct"), SglangServerArgs(), gpu="h100",
                    free_before_load_bytes=79 * GIB, weights_bytes=70 * GIB)


def test_old_release_needs_a_fraction() -> None:
    with pytest.raises(InvalidInputError, match="pass --mem-fraction-static"):
        plan_sglang(load_model_spec("llama-3.1-8b-instruct"), SglangServerArgs(version="0.5.20"), gpu="h100")


@pytest.mark.parametrize(("name", "reason"), [
    ("jamba-v0.1", "SGLang 0.5.23 does not serve JambaForCausalLM"),
    ("bamba-9b", "SGLang 0.5.23 does not serve BambaForCausalLM"),
    ("minimax-m1", "SGLang 0.5.23 does not serve MiniMaxM1ForCausalLM"),
    ("olmo-hybrid-7b", "SGLang 0.5.23 does not serve OlmoHybridForCausalLM"),
    ("falcon-40b-instruct", "SGLang 0.5.23 does not serve FalconForCausalLM"),
    ("a.x-k1", "SGLang 0.5.23 does not serve AXK1ForCausalLM"),
])
def test_refused_models(name: str, reason: str) -> None:
    with pytest.raises(InvalidInputError, match=reason) as raised:
        plan_sglang(load_model_spec(name), SglangServerArgs(tp_size=8), gpu="h200")
    assert "\n" not in str(raised.value)


def test_minicpm3_plans_from_its_config_and_is_refused_without_it() -> None:
    """SGLang caches MiniCPM3's MLA latent (kv_lora_rank + qk_rope_head_dim per token), which hkv's spec
    pages per head as vLLM does: the latent widths come from the config the spec was read from."""
    spec = load_model_spec("minicpm3-4b")
    plan_sglang(spec, SglangServerArgs(tp_size=8), gpu="h200")
    with pytest.raises(InvalidInputError, match="caches MiniCPM3ForCausalLM's MLA latent"):
        plan_sglang(replace(spec, hf_config=None), SglangServerArgs(tp_size=8), gpu="h200")


def test_context_longer_than_the_model() -> None:
    with pytest.raises(InvalidInputError, match="context_length 200,000 exceeds"):
        plan_sglang(load_model_spec("llama-3.1-8b-instruct"), SglangServerArgs(context_length=200_000), gpu="h100")


def test_budget_rounds_free_memory_like_the_tp_all_reduce() -> None:
    # 79 GiB free before loading, 64 GiB + 1,000 B after: at TP 1 the rest is
    # (64 GiB + 1,000 B) - 79 GiB x 0.17 = 50.57 GiB + 1,000 B = 54,299,125,039.7 B; at TP 2 SGLang reduces the
    # free bytes as float32, whose step at 64 GiB = 2^36 B is 2^13 = 8,192 B: the 1,000 B vanish,
    # 54,299,124,039.7 B
    weights = BudgetTerm.exact("weights", 15 * GIB - 1000, "given")
    one = SglangBudget(79 * GIB, weights, 0.83, 0, world_size=1)
    two = SglangBudget(79 * GIB, weights, 0.83, 0, world_size=2)
    assert one.available_bytes == pytest.approx(54_299_125_039, abs=2)
    assert two.available_bytes == pytest.approx(54_299_124_039, abs=2)


def test_pipeline_parallel_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="pp_size 1 only"):
        plan_sglang(load_model_spec("llama-3.1-8b-instruct"), SglangServerArgs(pp_size=2), gpu="h100")


def test_no_buffer_radix_cache_needs_page_one() -> None:
    # LFM2's radix cache has no extra buffer: "auto" is no_buffer, which asserts page_size 1
    with pytest.raises(InvalidInputError, match="page_size 1 only"):
        plan_sglang(load_model_spec("lfm2-1.2b"), SglangServerArgs(page_size=64), gpu="h100")


def test_drafted_speculative_decoding_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="without a draft model only"):
        plan_sglang(load_model_spec("qwen3-next-80b-a3b"),
                    SglangServerArgs(tp_size=4, speculative_algorithm="NEXTN", speculative_num_draft_tokens=4),
                    gpu="h100")
