"""hkv's own layout: never more waste than vLLM's, strictly less where vLLM pads, no Mamba inflation."""

import pytest
from toy_models import FULL, SLIDING, attention_model, gemma3_27b, gpt_oss_120b, granite4_like, llama4_scout

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.plan import build_layout
from hkv.planner.plan_config import PlanConfig

GIB = 2**30


def layouts(model, **cfg):
    cfg = PlanConfig(**{"available_kv_memory_bytes": 20 * GIB, "max_num_batched_tokens": 8192, **cfg})
    budget = compute_memory_budget(model, cfg)
    return build_layout("hkv", model, cfg, budget), build_layout("vllm", model, cfg, budget)


def test_gemma3_27b_less_padding_and_more_capacity():
    hkv, vllm = layouts(gemma3_27b())
    assert vllm.padding_slots() == 8
    # T: vLLM keeps 2 batches of 8,192 tokens in flight; hkv gives a request at most 2,048
    # prompt tokens a step (hkv_prefill_chunk_len) and schedules synchronously.
    assert (vllm.in_flight_tokens, hkv.in_flight_tokens) == (16_384, 2_048)
    # per request at 131,072 tokens, in block ids and layer-pages (sliding W = 1,024):
    #   vLLM g=10: full 8,192 + 6 sliding groups x (cdiv(1,023 + 16,384, 16) + 1 = 1,089) ids,
    #              x 10 slots = 147,260 layer-pages
    #   hkv: sliding cdiv(1,023 + 2,048, 16) + 1 = 193; ids allowed: 2 x vLLM's at hkv's T
    #        (8,192 + 6 x 193 = 9,350) = 18,700.
    #        g=5 : 2 full groups (5, 5) x 8,192 + 11 sliding x 193 = 18,507 ids x 5 = 92,535
    #        g=10: 9,350 ids x 10 = 93,500; g=6: 18,121 x 6 = 108,726; g=11: 9,157 x 11 = 100,727;
    #        g=4: 3 full groups = 24,576 ids, over the allowance
    assert [g.num_layers for g in hkv.groups if g.kind is FULL] == [5, 5]
    assert len(hkv.groups) == 13 and hkv.padding_slots() == 3  # 52 sliding = 8 x 5 + 3 x 4
    assert sum(hkv.blocks_per_request(131072)) * 5 == 92_535
    assert hkv.waste_fraction(131072) < vllm.waste_fraction(131072)
    assert hkv.max_concurrency(131072) > vllm.max_concurrency(131072)


@pytest.mark.parametrize(("model", "vllm_pages", "hkv_pages", "ideal_pages"), [
    # blocks per request at 131,072 tokens over one full group and its local groups; ideal = what
    # must stay. T: vLLM 16,384, hkv 2,048.
    # gpt-oss-120b, 18 full + 18 sliding (W = 128) in 2 groups of 18: full 8,192; sliding
    # vLLM cdiv(127 + 16,384, 16) + 1 = 1,033, hkv cdiv(127 + 2,048, 16) + 1 = 137; ideal 8 blocks.
    (gpt_oss_120b(), 8192 + 1033, 8192 + 137, 8192 + 8),
    # Llama-4-Scout, 12 full + 36 chunked (C = 8,192) in groups of 12: full 8,192; chunked
    # vLLM 3 x cdiv(8,192 + 16,384, 16) = 3 x 1,536, hkv 3 x cdiv(8,192 + 2,048, 16) = 3 x 640;
    # ideal 3 x 512.
    (llama4_scout(), 8192 + 3 * 1536, 8192 + 3 * 640, 8192 + 3 * 512),
])
def test_no_padding_models_keep_vllm_grouping(model, vllm_pages, hkv_pages, ideal_pages):
    hkv, vllm = layouts(model, max_model_len=131072)
    assert [g.num_layers for g in hkv.groups] == [g.num_layers for g in vllm.groups]
    # same groups; hkv's smaller T leaves less of the pool unused
    assert vllm.waste_fraction(131072) == pytest.approx(1 - ideal_pages / vllm_pages, rel=1e-3)
    assert hkv.waste_fraction(131072) == pytest.approx(1 - ideal_pages / hkv_pages, rel=1e-3)


def test_mamba_hybrid_keeps_small_attention_block_and_one_state():
    hkv, vllm = layouts(granite4_like())
    attention = [g for g in hkv.groups if g.kind is FULL]
    states = [g for g in hkv.groups if g.kind is CacheKind.RECURRENT]
    assert {g.block_size for g in attention} == {16} and {g.block_size for g in vllm.groups} == {528}
    # one group holding all 36 states of a request in one block of 36 x 2,147,840 bytes, unpadded
    assert [g.num_layers for g in states] == [36]
    assert hkv.pools[1].bytes_per_block == 36 * 2_147_840
    assert states[0].blocks_per_request(131072, hkv.in_flight_tokens) == 1
    assert hkv.waste_fraction(131072) < vllm.waste_fraction(131072)
    assert hkv.max_num_requests(131072) >= vllm.max_num_requests(131072)


def test_state_pool_split_is_balanced_at_max_len():
    hkv, _ = layouts(granite4_like())
    attention_pool, state_pool = hkv.pools
    # By hand, budget 20 GiB = 21,474,836,480 B, L = 131,072, T = 16,384:
    #   attention block: 4 layers x 16 tokens x 8 heads x (128 + 128) x 2 B = 262,144 B; a request
    #   holds 131,072 / 16 = 8,192 of them = 2,147,483,648 B.
    #   state block: 36 states x 2,147,840 B = 77,322,240 B; a request holds 1.
    #   null blocks 262,144 + 77,322,240 = 77,584,384; per request 2,224,805,888;
    #   n = (21,474,836,480 - 77,584,384) // 2,224,805,888 = 9 (9.62).
    #   state pool: 9 + 1 null = 10 blocks; attention: the rest, 21,474,836,480 - 10 x 77,322,240
    #   = 20,701,614,080 B // 262,144 = 78,970 blocks (78,970.3).
    assert (attention_pool.num_blocks, state_pool.num_blocks) == (78_970, 10)
    n_attention = (attention_pool.num_blocks - 1) // 8192  # 78,969 // 8,192 = 9
    n_state = state_pool.num_blocks - 1
    assert (n_attention, n_state) == (9, 9)
    # the state pool holds exactly the states of the requests the attention pool can hold
    assert n_state == hkv.max_num_requests(131072) <= n_attention


def test_expected_average_length_moves_the_split():
    long_split, _ = layouts(granite4_like())
    short_split, _ = layouts(granite4_like(), expected_avg_seq_len=4096)
    assert short_split.pools[1].num_blocks > long_split.pools[1].num_blocks
    assert short_split.max_num_requests(4096) > long_split.max_num_requests(4096)


def test_attention_only_hkv_never_worse_on_mixed_shapes():
    for kinds in ([FULL, SLIDING, SLIDING, SLIDING], [SLIDING] * 7 + [FULL] * 3, [FULL, SLIDING] * 9 + [FULL]):
        for max_len in (512, 8192, 131072):
            hkv, vllm = layouts(attention_model(kinds, kv_heads=4, head_dim=64, window=256), max_model_len=max_len)
            assert hkv.waste_fraction(max_len) <= vllm.waste_fraction(max_len) + 1e-12
