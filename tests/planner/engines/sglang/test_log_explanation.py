"""explain_sglang_log's budget band and search, with a hand-made pool rule standing in for SGLang's
(so every expected number is worked out here): full = budget // 1,000 bytes per token, swa =
int(full x 0.8), max_running_requests = full // 2 capped at 2,048. hkv's real SGLang pools are
checked against SGLang itself by the oracle tests; here only the explanation's own logic is."""

from __future__ import annotations

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.log import read_sglang_log
from hkv.planner.engines.sglang.log_explanation import explain_sglang_log, log_server_args
from hkv.planner.engines.sglang.log_size_checks import size_checks
from hkv.planner.engines.sglang.pools import SglangPools
from hkv.planner.errors import DoesNotFitError, InvalidInputError

GIB = 2**30
MODEL = load_model_spec("gpt-oss-120b")


def toy_pools(model, args, budget, mfs):
    if budget < 1000:
        raise DoesNotFitError("no token fits")
    full = budget // 1000
    return SglangPools(mem_fraction_static=mfs, available_bytes=budget, max_total_num_tokens=full,
                       swa_tokens=int(full * 0.8), max_mamba_cache_size=None,
                       max_running_requests=min(2048, full // 2), context_len=args.context_length or 131072,
                       page_size=1)


ARGS = "server_args={'model_path': 'openai/gpt-oss-120b', 'tp_size': 1, 'mem_fraction_static': 0.8, " \
       "'context_length': 32768, 'cuda_graph_max_bs_decode': 256}"


def test_budget_inferred_from_the_full_pool_reproduces_the_rest():
    # full 375,360 -> budgets 375,360,000..375,360,999; swa int(375,360 x 0.8) = 300,288 (MiMo's real pair)
    log = read_sglang_log([ARGS, "Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288",
                           "max_total_num_tokens=375360, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                           "max_running_requests=2048, context_len=32768, available_gpu_mem=5.12 GB"])
    e = explain_sglang_log(log, MODEL, {}, None, toy_pools, None)
    assert e.ok and e.pools.available_bytes == 375_360_000
    assert [c.name for c in e.checks] == ["full_layer_tokens", "swa_layer_tokens", "max_total_num_tokens",
                                          "max_running_requests", "context_len"]
    assert e.band_source == "inferred from the logged pool"


def test_a_figure_the_rule_does_not_give_fails_its_check():
    log = read_sglang_log([ARGS, "Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300000"])
    e = explain_sglang_log(log, MODEL, {}, None, toy_pools, None)
    assert not e.ok
    assert [(c.name, c.logged, c.reproduced, c.ok) for c in e.checks] == [
        ("full_layer_tokens", "375,360", "375,360", True), ("swa_layer_tokens", "300,000", "300,288", False)]


def test_band_from_the_weight_lines():
    # rest = end - begin x (1 - 0.8): 10.00 GiB - 70.00 GiB x 0.2 < 0 would not start; use 30.00 / 70.00:
    # 30 - 14 = 16 GiB; each figure +-0.005 GiB: low = 29.995 - 70.005 x 0.2, high = 30.005 - 69.995 x 0.2
    lines = [ARGS, "Load weight begin. avail mem=70.00 GB",
             "Load weight end. elapsed=1.00 s, type=X, avail mem=30.00 GB, mem usage=40.00 GB.",
             f"max_total_num_tokens={16 * GIB // 1000}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
             "max_running_requests=2048, context_len=32768, available_gpu_mem=5.12 GB"]
    e = explain_sglang_log(read_sglang_log(lines), MODEL, {}, None, toy_pools, None)
    half = GIB // 200
    assert e.band_source == "log"
    assert e.band == (int(30 * GIB - half - (70 * GIB + half) * 0.2), int(30 * GIB + half - (70 * GIB - half) * 0.2))
    assert e.ok


def test_pool_outside_the_printed_band_is_not_reproduced():
    lines = [ARGS, "Load weight begin. avail mem=70.00 GB",
             "Load weight end. elapsed=1.00 s, type=X, avail mem=30.00 GB, mem usage=40.00 GB.",
             "max_total_num_tokens=1000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
             "max_running_requests=500, context_len=32768"]
    e = explain_sglang_log(read_sglang_log(lines), MODEL, {}, None, toy_pools, None)
    assert not e.budget_found and not e.ok
    # the band's lower end (about 16 GiB, some 17 million toy tokens) is the nearest to 1,000 tokens
    assert e.pools.available_bytes == e.band[0]
    assert [(c.name, c.ok) for c in e.checks] == [("max_total_num_tokens", False), ("max_running_requests", False),
                                                 ("context_len", True)]


def test_given_values_override_the_log_and_missing_fraction_is_one_clear_error():
    log = read_sglang_log([ARGS])
    args = log_server_args(log, {"tp_size": 2})
    assert (args.tp_size, args.mem_fraction_static, args.context_length, args.cuda_graph_max_bs) == (2, 0.8, 32768, 256)
    summary = ("max_total_num_tokens=1000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
               "max_running_requests=500, context_len=32768")
    bare = read_sglang_log([summary])
    weights = ["Load weight begin. avail mem=70.00 GB", "Load weight end. type=X, avail mem=30.00 GB, mem usage=40.00 GB."]
    with pytest.raises(InvalidInputError, match="mem_fraction_static"):  # needed to turn those lines into a budget
        explain_sglang_log(read_sglang_log([*weights, summary]), MODEL, {}, None, toy_pools, None)
    assert explain_sglang_log(bare, MODEL, {"context_length": 32768}, None, toy_pools, None).ok
    assert explain_sglang_log(bare, MODEL, {"mem_fraction_static": 0.9, "context_length": 32768}, 1_000_999,
                              toy_pools, None).ok


def test_multimodal_models_leave_sglang_vlm_cache_out_of_the_band():
    # Qwen3.5-27B is served as multimodal: SGLANG_VLM_CACHE_SIZE_MB (100 MiB) comes out of the rest
    lines = [ARGS, "Load weight begin. avail mem=70.00 GB",
             "Load weight end. elapsed=1.00 s, type=X, avail mem=30.00 GB, mem usage=40.00 GB.",
             "max_total_num_tokens=1000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
             "max_running_requests=500, context_len=32768"]
    text = explain_sglang_log(read_sglang_log(lines), MODEL, {}, None, toy_pools, None).band
    vlm = explain_sglang_log(read_sglang_log(lines), load_model_spec("qwen3.5-27b"), {}, None, toy_pools, None).band
    assert (text[0] - vlm[0], text[1] - vlm[1]) == (100 * 2**20, 100 * 2**20)


@pytest.mark.parametrize(("logged", "predicted", "expected"), [
    # K + V as printed; an MLA pool prints one size
    (["KV Cache is allocated. #tokens: 5, K size: 1.90 GB, V size: 1.90 GB"],
     ["KV Cache is allocated. dtype: torch.bfloat16, #tokens: 5, K size: 1.90 GB, V size: 1.90 GB"],
     [("KV Cache size (GiB)", "1.90 + 1.90", "1.90 + 1.90", True)]),
    (["KV Cache is allocated. dtype: torch.bfloat16, #tokens: 5, KV size: 40.31 GB"],
     ["KV Cache is allocated. dtype: torch.bfloat16, #tokens: 5, KV size: 40.30 GB"],
     [("KV Cache size (GiB)", "40.31", "40.30", False)]),
    # a sliding pool the prediction does not have (hkv gives the model one pool)
    (["SWA KV Cache is allocated. #tokens: 5, K size: 1.00 GB, V size: 1.00 GB",
      "SWAKVPool mem usage: 4.00 GB, swa size: 5, full size: 6"],
     ["KV Cache is allocated. #tokens: 6, K size: 2.00 GB, V size: 2.00 GB"],
     [("SWA KV Cache size (GiB)", "1.00 + 1.00", "not printed", False),
      ("SWAKVPool mem usage (GiB)", "4.00", "not printed", False)]),
])
def test_size_checks(logged, predicted, expected):
    checks = size_checks(read_sglang_log(logged), read_sglang_log(predicted))
    assert [(c.name, c.logged, c.reproduced, c.ok) for c in checks] == expected
