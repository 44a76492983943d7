"""vLLM layout against the worked examples of the design (shared/reference/vllm-hybrid-kv.md 1.6, 2.3).

Every expected number is computed by hand in the comment next to it.
"""

import pytest
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.capacity.capacity import vllm_log_lines
from hkv.planner.engines.vllm.rules import CURRENT_LOG_FORMAT
from hkv.planner.errors import LayoutUnavailableError
from hkv.planner.plan import build_layout
from hkv.planner.plan_config import PlanConfig
from toy_models import (
    CHUNKED,
    FULL,
    SLIDING,
    attention_model,
    gemma3_27b,
    gpt_oss_120b,
    granite4_like,
    llama4_scout,
    nemotron_h_8b_like,
)

GIB = 2**30


def vllm_layout(model, **cfg):
    cfg = PlanConfig(**{"available_kv_memory_bytes": 10 * GIB, "max_num_batched_tokens": 8192, **cfg})
    return build_layout("vllm", model, cfg, compute_memory_budget(model, cfg))


def test_gemma3_27b_groups_padding_and_blocks():
    layout = vllm_layout(gemma3_27b())
    sizes = [(g.kind, g.num_layers) for g in layout.groups]
    # 52 sliding split by group_size 10 -> 6 groups [9,9,9,9,8,8] (layer 0 is sliding: first), then full x10.
    assert sizes == [(SLIDING, 9)] * 4 + [(SLIDING, 8)] * 2 + [(FULL, 10)]
    assert layout.padding_slots() == 8
    assert "Add 8 padding layers, may waste at most 15.38% KV cache memory" in layout.notes
    # page = 16 tokens x 16 heads x (128+128) x 2 B = 131,072; bytes/block = 10 x 131,072.
    assert {g.page_size_bytes for g in layout.groups} == {131_072}
    assert layout.pools[0].bytes_per_block == 1_310_720
    assert layout.pools[0].num_blocks == 10 * GIB // 1_310_720 == 8192
    # strided assignment: group 0 = sliding layers [0::6] of the sliding list.
    sliding_ids = [i for i in range(62) if (i + 1) % 6]
    assert layout.groups[0].layer_ids == tuple(sliding_ids[0::6])


def test_gemma3_blocks_per_request_at_128k():
    layout = vllm_layout(gemma3_27b())
    # T = 2 x 8192; full: 131072/16 = 8192; sliding: cdiv(1023 + 16384, 16) + 1 = 1088 + 1 = 1089.
    assert layout.blocks_per_request(131072) == (1089,) * 6 + (8192,)
    assert sum(layout.blocks_per_request(131072)) == 14_726
    assert layout.max_concurrency(131072) == pytest.approx(8192 / 14726)
    # the null block is not grantable: (8192 - 1) // 14726 = 0.
    assert layout.max_num_requests(131072) == 0


def test_gpt_oss_120b():
    layout = vllm_layout(gpt_oss_120b())
    assert [(g.kind, g.num_layers) for g in layout.groups] == [(SLIDING, 18), (FULL, 18)]
    # page = 16 x 8 x 128 x 2 = 32,768; bytes/block = 18 x 32,768 = 589,824
    assert layout.pools[0].bytes_per_block == 589_824
    # full 8192 + sliding cdiv(127 + 16384, 16) + 1 = 1032 + 1
    assert layout.blocks_per_request(131072) == (1033, 8192)


def test_llama4_scout_tp8_chunked():
    layout = vllm_layout(llama4_scout(), tp=8, max_model_len=1_048_576)
    assert [(g.kind, g.num_layers) for g in layout.groups] == [(CHUNKED, 12)] * 3 + [(FULL, 12)]
    # 1 KV head per rank: 16 x 1 x 256 x 2 = 8,192 per page; 12 layers -> 98,304 per block.
    assert layout.pools[0].bytes_per_block == 98_304
    # full 1,048,576/16 = 65,536; chunked cdiv(8192 + 16384, 16) = 1,536 each -> 70,144.
    assert sum(layout.blocks_per_request(1_048_576)) == 70_144


@pytest.mark.parametrize("model, block_size, page, bytes_per_block, state_note", [
    # Granite-4/Bamba: state (3 x 8448 + 128 x 64 x 128) x 2 = 2,147,840 B; attention 4,096 B/token;
    # 16 x cdiv(2,147,840, 16 x 4,096) = 16 x 33 = 528; page 528 x 4,096 = 2,162,688 (+0.69 %).
    (granite4_like(), 528, 2_162_688, 4 * 2_162_688, "Padding mamba page size by 0.69%"),
    # Nemotron-H-8B: conv 3 x (8192 + 2 x 8 x 128) x 2 = 61,440 + ssm 128 x 64 x 128 x 4 = 4,194,304
    # = 4,255,744; 16 x cdiv(4,255,744, 65,536) = 16 x 65 = 1040; page 4,259,840 (+0.10 %).
    (nemotron_h_8b_like(), 1040, 4_259_840, 4 * 4_259_840, "Padding mamba page size by 0.10%"),
])
def test_mamba_alignment(model, block_size, page, bytes_per_block, state_note):
    layout = vllm_layout(model)
    assert {g.block_size for g in layout.groups} == {block_size}
    assert {g.page_size_bytes for g in layout.groups} == {page}
    assert layout.pools[0].bytes_per_block == bytes_per_block
    assert any(n.startswith(state_note) for n in layout.notes)
    assert all(g.num_layers == 4 for g in layout.groups)


def test_granite_blocks_per_request_align_mode():
    layout = vllm_layout(granite4_like())
    # attention cdiv(131072, 528) = 249; 9 Mamba groups x 3 state blocks (2 live + 1 checkpoint)
    assert sum(layout.blocks_per_request(131072)) == 249 + 27
    no_cache = vllm_layout(granite4_like(), enable_prefix_caching=False)
    assert sum(no_cache.blocks_per_request(131072)) == 249 + 9


@pytest.mark.parametrize("kinds, expected", [
    # 1 full + 3 sliding: min 1, max 3 >= 1.5 -> group size 1: four groups of one layer.
    ([FULL, SLIDING, SLIDING, SLIDING], [(FULL, 1), (SLIDING, 1), (SLIDING, 1), (SLIDING, 1)]),
    # 10 full + 20 sliding (1 full, 2 sliding repeated): group size 10 -> full x10, sliding x10 x2.
    ([FULL, SLIDING, SLIDING] * 10, [(FULL, 10), (SLIDING, 10), (SLIDING, 10)]),
    # 18 sliding + 19 full (gpt-oss + EAGLE): 19 < 1.5 x 18 -> group size 19, one padding slot.
    ([SLIDING, FULL] * 18 + [FULL], [(SLIDING, 18), (FULL, 19)]),
])
def test_group_size_rule(kinds, expected):
    layout = vllm_layout(attention_model(kinds, kv_heads=2, head_dim=64, window=32))
    assert [(g.kind, g.num_layers) for g in layout.groups] == expected


def test_ten_full_twenty_sliding_request_blocks():
    # 10 full + 20 sliding, block 16, window 32: a 112-token request needs 7 full blocks.
    layout = vllm_layout(attention_model([FULL, SLIDING, SLIDING] * 10, kv_heads=2, head_dim=64, window=32),
                         max_num_batched_tokens=16, vllm_log="legacy")
    # legacy T = 16: sliding cdiv(min(31 + 16, 112), 16) + 1 = 3 + 1 = 4 admission blocks; full 7.
    assert layout.blocks_per_request(112) == (7, 4, 4)


def test_uniform_model_is_one_group():
    layout = vllm_layout(attention_model([FULL] * 32, kv_heads=8, head_dim=128))
    assert len(layout.groups) == 1 and layout.groups[0].num_layers == 32 and layout.padding_slots() == 0


def test_log_lines_current_and_legacy():
    layout = vllm_layout(gpt_oss_120b(), max_model_len=8192)
    n = 10 * GIB // 589_824  # 18,204 blocks
    # sliding at L=8192: cdiv(min(16511, 8192), 16) + 1 = 512 + 1 = 513; full 512 -> 1025 per request
    conc = n / 1025
    assert vllm_log_lines(layout, CURRENT_LOG_FORMAT) == (
        f"GPU KV cache size: {int(conc * 8192):,} tokens, "
        f"Maximum concurrency for 8,192 tokens per request: {conc:.2f}x",)
    legacy_cfg = PlanConfig(vllm_log="legacy")
    legacy = vllm_layout(gpt_oss_120b(), max_model_len=8192, vllm_log="legacy")
    # legacy (0.20.0): tokens = num_blocks // 2 groups x 16, on a line of its own; T = 8,192 makes the
    # sliding charge cdiv(min(8,319, 8,192), 16) + 1 = 513 as well, so the concurrency is the same.
    assert vllm_log_lines(legacy, legacy_cfg.vllm_rules().log_format) == (
        f"GPU KV cache size: {n // 2 * 16:,} tokens", f"Maximum concurrency for 8,192 tokens per request: {conc:.2f}x")


def test_no_hybrid_promotes_local_layers():
    cfg = PlanConfig(available_kv_memory_bytes=10 * GIB, max_num_batched_tokens=8192)
    model = gemma3_27b()
    layout = build_layout("vllm-no-hybrid", model, cfg, compute_memory_budget(model, cfg))
    assert [(g.kind, g.num_layers) for g in layout.groups] == [(FULL, 62)]
    with pytest.raises(LayoutUnavailableError):
        build_layout("vllm-no-hybrid", granite4_like(), cfg, compute_memory_budget(granite4_like(), cfg))


def test_pipeline_parallel_takes_the_tightest_stage():
    # gpt-oss, pp=2: 18 layers per stage, 9 sliding + 9 full each; each group has 9 layers per stage
    # -> 9 x 32,768 = 294,912 bytes per block per stage.
    layout = vllm_layout(gpt_oss_120b(), pp=2)
    assert layout.pools[0].bytes_per_block == 294_912
    assert layout.pools[0].num_blocks == 10 * GIB // 294_912


def test_only_mamba2_holds_a_prefill_checkpoint_block():
    # vLLM 0.32 align mode: MambaMixer2 adds one prefill checkpoint block (2 live + 1); Mamba1,
    # gated delta-net and lightning layers hold 2. With prefix caching off, one state each.
    from hkv.model_specs.cache_spec import StateCacheSpec
    from hkv.planner.engines.vllm.layout import mamba_state_blocks

    def spec(variant):
        return StateCacheSpec(variant, ((3, 64),), (2,))
    current = mamba_state_blocks(PlanConfig(), True)
    assert [current(spec(v)) for v in ("mamba2", "mamba1", "gdn", "lightning", "short_conv")] == [3, 2, 2, 2, 2]
    assert mamba_state_blocks(PlanConfig(vllm_version="0.31.0"), True)(spec("mamba2")) == 2  # no checkpoint yet
    assert mamba_state_blocks(PlanConfig(), False)(spec("mamba2")) == 1
    # speculative blocks: one per draft token from 0.15; 0.14 counts none.
    assert mamba_state_blocks(PlanConfig(speculative_tokens=2), False)(spec("gdn")) == 3
    assert mamba_state_blocks(PlanConfig(speculative_tokens=2, vllm_version="0.14.0"), False)(spec("gdn")) == 1


def test_in_flight_tokens_follow_the_cuda_default_runner():
    # V2 model runner with async scheduling keeps pp + 1 batches in flight; legacy: one batch.
    from hkv.planner.engines.vllm.layout import in_flight_tokens
    assert in_flight_tokens(PlanConfig(), 8192) == 16384
    assert in_flight_tokens(PlanConfig(pp=2), 8192) == 24576
    assert in_flight_tokens(PlanConfig(vllm_log="legacy", pp=2), 8192) == 8192
    assert in_flight_tokens(PlanConfig(vllm_version="0.25.1"), 8192) == 8192  # T = mnbt before 0.26
    assert in_flight_tokens(PlanConfig(vllm_version="0.26.0"), 8192) == 16384


def test_mistral_window_covering_the_context_is_sliding_for_vllm_only():
    from hkv.model_specs.from_hf_config import from_hf_config
    config = {"model_type": "mistral", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
              "max_position_embeddings": 2048, "sliding_window": 2048, "torch_dtype": "bfloat16"}
    model = from_hf_config(config, "toy-mistral")
    cfg = PlanConfig(available_kv_memory_bytes=GIB, max_num_batched_tokens=256)
    budget = compute_memory_budget(model, cfg)
    vllm = build_layout("vllm", model, cfg, budget)
    hkv = build_layout("hkv", model, cfg, budget)
    # vLLM: sliding W=2048: cdiv(min(2047 + 512, 2048), 16) + 1 = 129; hkv: full 2048 / 16 = 128
    assert vllm.blocks_per_request(2048) == (129,)
    assert hkv.blocks_per_request(2048) == (128,)


def test_physical_limit_concurrency_by_hand():
    # 10 full + 20 sliding layers, 2 KV heads x 64 dims x 2 bytes x (K, V) = 512 B per token per
    # layer; window 32; requests of 8192 tokens. Ideal bytes per request:
    #   full 10 x 8192 x 512 + sliding 20 x 32 x 512 = 41,943,040 + 327,680 = 42,270,720 B.
    # Pools: one shared pool of 10 GiB // (10 slots x 16 tokens x 512 B = 81,920 B) blocks.
    layout = vllm_layout(attention_model([FULL, SLIDING, SLIDING] * 10, kv_heads=2, head_dim=64, window=32),
                         max_model_len=8192)
    num_blocks = 10 * GIB // 81_920
    assert layout.pools[0].num_blocks == num_blocks
    assert layout.physical_limit_concurrency(8192) == pytest.approx(num_blocks * 81_920 / 42_270_720)


def test_physical_limit_gemma3_27b_at_8k():
    # Gemma-3-27B: 62 layers, 16 KV heads x 128 dims x 2 bytes x 2 = 8,192 B per token per
    # layer; 10 full layers keep 8192 tokens, 52 sliding layers keep their 1024-token window:
    #   ideal = (10 x 8192 + 52 x 1024) x 8192 = 135,168 x 8,192 = 1,107,296,256 B per request.
    # 7 groups of 10 slots (padding included) of 16-token pages: 16 x 8,192 x 10 = 1,310,720 B
    # per block; 10 GiB // that = 8,192 blocks.
    layout = vllm_layout(gemma3_27b(), max_model_len=8192)
    assert layout.pools[0].num_blocks == 8192 and layout.pools[0].bytes_per_block == 1_310_720
    ideal = (10 * 8192 + 52 * 1024) * 8192
    assert ideal == 1_107_296_256
    assert layout.ideal_bytes_per_request(8192) == ideal
    assert layout.physical_limit_concurrency(8192) == pytest.approx(8192 * 1_310_720 / ideal)
