"""Classic families whose configs spell the standard keys their own way (GPT-2, GPT-J, GPT-BigCode,
BLOOM, Falcon, OPT, MPT, StarCoder2, DBRX, LongCat-Flash): each plans from transformers' default
config with the KV cache vLLM 0.32 allocates.

Expected bytes are worked by hand from vLLM's model code: one layer's K and V per token is
2 x KV heads x head size x 2 B (bf16), or the MLA latent (kv_lora_rank + qk_rope_head_dim) x 2 B.
Per TP rank the KV heads are divided, at least one (vLLM replicates a single KV head).
"""

from __future__ import annotations

import pytest
from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

transformers = pytest.importorskip("transformers")


def _saved(tmp_path, model_type, **overrides):
    transformers.AutoConfig.for_model(model_type, **overrides).save_pretrained(tmp_path)
    return str(tmp_path)


# (model_type, overrides, cache layers, kv heads, head size, bytes per token and layer at TP 1, at TP 4)
CASES = [
    # GPT-2 (and GPT-SW3, which is GPT2LMHeadModel): 12 layers, 12 heads x 768/12 = 64 -> 2 x 12 x 64 x 2.
    ("gpt2", {}, 12, 12, 64, 3_072, 768),
    # The stray GQA keys GPT-2 does not read must not shrink its cache (vLLM's GPT2Attention is MHA).
    ("gpt2", {"num_key_value_heads": 2, "head_dim": 16}, 12, 12, 64, 3_072, 768),
    # GPT-J: 28 layers, 16 heads x 4096/16 = 256 -> 2 x 16 x 256 x 2.
    ("gptj", {}, 28, 16, 256, 16_384, 4_096),
    # BLOOM's class default is a toy: 2 layers, 8 heads x 64/8 = 8 -> 2 x 8 x 8 x 2.
    ("bloom", {}, 2, 8, 8, 256, 64),
    # Falcon-7B: multi_query, new_decoder_architecture off -> one KV head of 4544/71 = 64, replicated
    # on every rank.
    ("falcon", {}, 32, 1, 64, 256, 256),
    # Falcon-40B geometry: new decoder architecture, 8 KV heads of 8192/128 = 64 -> 2 x 8 x 64 x 2;
    # TP 4: 2 heads per rank.
    ("falcon", {"new_decoder_architecture": True, "num_kv_heads": 8, "hidden_size": 8192,
                "num_attention_heads": 128, "num_hidden_layers": 60}, 60, 8, 64, 2_048, 512),
    # OPT-125m: 12 layers, 12 heads x 64.
    ("opt", {}, 12, 12, 64, 3_072, 768),
    # MPT-1b default: 24 layers, 16 heads x 2048/16 = 128 -> 2 x 16 x 128 x 2.
    ("mpt", {}, 24, 16, 128, 8_192, 2_048),
    # GPT-BigCode (StarCoder): multi_query -> one KV head of 768/12 = 64; without it every head.
    ("gpt_bigcode", {}, 12, 1, 64, 256, 256),
    ("gpt_bigcode", {"multi_query": False}, 12, 12, 64, 3_072, 768),
    # StarCoder2-3B: 30 layers, 2 KV heads x 3072/24 = 128 -> 2 x 2 x 128 x 2; TP 4: one head per rank.
    ("starcoder2", {}, 30, 2, 128, 1_024, 512),
    # DBRX default: 24 layers, attn_config.kv_n_heads 1, head 2048/16 = 128 -> 2 x 1 x 128 x 2.
    ("dbrx", {}, 24, 1, 128, 512, 512),
]


@pytest.mark.parametrize("model_type, overrides, num_layers, kv_heads, head_size, tp1_bytes, tp4_bytes",
                         CASES)
def test_kv_bytes_per_token_match_vllm(tmp_path, model_type, overrides, num_layers, kv_heads, head_size,
                                       tp1_bytes, tp4_bytes):
    spec = load_model_spec(_saved(tmp_path, model_type, **overrides))
    assert len(spec.cache_layers) == num_layers
    assert {(c.kind.value, c.num_kv_heads, c.head_dim, c.is_mla) for c in spec.cache_layers} == {
        ("full", kv_heads, head_size, False)}
    layer = spec.cache_layers[0]
    assert layer.cache_spec(CacheOptions(tp=1, kv_dtype_bytes=2)).bytes_per_token == tp1_bytes
    assert layer.cache_spec(CacheOptions(tp=4, kv_dtype_bytes=2)).bytes_per_token == tp4_bytes


def test_bloom_older_spelling(tmp_path):
    # BLOOM-176B's geometry in the older spelling: n_embed (BloomConfig still takes it over hidden_size)
    # and a seq_length (a length key vLLM reads): 112 heads x 14336/112 = 128 -> 2 x 112 x 128 x 2 B
    # = 57,344 B per token and layer, 7,168 B per rank at TP 8.
    config = {"architectures": ["BloomForCausalLM"], "model_type": "bloom", "n_embed": 14336, "n_layer": 70,
              "num_attention_heads": 112, "seq_length": 2048, "vocab_size": 250880}
    from hkv.model_specs.from_hf_config import from_hf_config
    spec = from_hf_config(config, "bloom-176b")
    assert (spec.hidden_size, spec.max_model_len, len(spec.cache_layers)) == (14336, 2048, 70)
    assert spec.cache_layers[0].cache_spec(CacheOptions(tp=8, kv_dtype_bytes=2)).bytes_per_token == 57_344 // 8


def test_longcat_flash_caches_two_mla_latents_per_block(tmp_path):
    # 28 blocks x 2 MLA attentions = 56 cache layers of (512 + 64) x 2 B = 1,152 B per token, at any TP;
    # a 16-token page is 18,432 B.
    spec = load_model_spec(_saved(tmp_path, "longcat_flash"))
    assert len(spec.cache_layers) == 56 and all(c.is_mla and c.head_dim == 576 for c in spec.cache_layers)
    assert spec.cache_layers[0].cache_spec(CacheOptions(tp=8, kv_dtype_bytes=2)).bytes_per_token == 1_152
    layout = plan(spec, PlanConfig(gpu="h200", max_model_len=32768)).reports["vllm"].layout
    assert [(g.kind.value, g.num_layers, g.page_size_bytes) for g in layout.groups] == [("full", 56, 18_432)]


def test_starcoder2_window_applies_to_every_layer(tmp_path):
    # vLLM serves StarCoder2 through its Transformers backend, whose layers take the model-wide
    # sliding_window (cache_config.sliding_window): StarCoder2-15B's 4,096 under a 16,384 context.
    spec = load_model_spec(_saved(tmp_path, "starcoder2", sliding_window=4096, max_position_embeddings=16384))
    assert {(c.kind.value, c.window_len) for c in spec.cache_layers} == {("sliding", 4096)}


@pytest.mark.parametrize("model_type, overrides, max_len", [
    ("gpt2", {}, 1024),  # n_positions
    ("dbrx", {}, 2048),  # max_seq_len
    ("mpt", {"max_seq_len": 4096}, 4096),  # max_seq_len
    ("bloom", {}, 2048),  # none: vLLM's default
])
def test_context_length_from_the_family_key(tmp_path, model_type, overrides, max_len):
    spec = load_model_spec(_saved(tmp_path, model_type, **overrides))
    assert spec.max_model_len == max_len
    assert ("vLLM assumes 2,048 tokens" in spec.note) == (model_type == "bloom")


def test_family_dimensions_feed_the_plan(tmp_path):
    # GPT-2: 124,439,808 parameters (the published GPT-2 small count), MLP 4 x 768 = 3,072 since
    # n_inner is null; a 16-token page of one layer is 16 x 3,072 B = 49,152 B.
    spec = load_model_spec(_saved(tmp_path, "gpt2"))
    assert (spec.num_params, spec.hidden_size, spec.intermediate_size) == (124_439_808, 768, 3_072)
    layout = plan(spec, PlanConfig(gpu="h100")).reports["vllm"].layout
    assert [(g.kind.value, g.num_layers, g.page_size_bytes) for g in layout.groups] == [("full", 12, 49_152)]


def test_longcat_flash_counts_no_weights_for_identity_experts(tmp_path):
    # transformers 5.24 gives gate_up_proj rows to the zero (identity) experts too; vLLM builds only
    # the n_routed_experts. With 2 blocks, 2 zero experts, expert width 32 and hidden 64 that is
    # 2 x 2 x (2 x 32) x 64 = 16,384 parameters hkv must not count.
    torch = pytest.importorskip("torch")
    config = transformers.AutoConfig.for_model(
        "longcat_flash", hidden_size=64, num_attention_heads=4, num_layers=2, vocab_size=256,
        ffn_hidden_size=80, expert_ffn_hidden_size=32, n_routed_experts=4, zero_expert_num=2, moe_topk=2,
        kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
        pad_token_id=0, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    built = sum(p.numel() for p in model.parameters())
    from hkv.model_specs.from_hf_config import from_hf_config
    assert from_hf_config(config.to_dict(), "tiny-longcat").num_params == built - 16_384


def test_lfm2_moe_without_layer_types_is_refused_as_vllm_refuses_it(tmp_path):
    # Lfm2MoeConfig() leaves layer_types None; vLLM 0.32's model indexes it per layer (a TypeError there).
    from hkv.model_specs.errors import InvalidConfigError
    with pytest.raises(InvalidConfigError, match="vLLM cannot load it either"):
        load_model_spec(_saved(tmp_path, "lfm2_moe"))


# Catalog entries: (name, TP that fits an H100, layer mix, KV bytes per token of the whole model at TP 1,
# parameters by hand).
CATALOG = [
    # 60 x 2 x 8 x 64 x 2 = 122,880. Params: embeddings 65,024 x 8192 = 532,676,608 (tied); per layer
    # ln_attn + ln_mlp 32,768, qkv 8192 x (128 + 16) x 64 = 75,497,472, dense 67,108,864, MLP
    # 2 x 8192 x 32,768 = 536,870,912 -> 679,510,016 x 60 = 40,770,600,960; ln_f 16,384.
    ("falcon-40b-instruct", 2, {"full": 60}, 122_880, 41_303_293_952),
    # 40 x 2 x 8 x 128 x 2 = 163,840. Params: embeddings 100,352 x 6144 = 616,562,688, twice (untied);
    # per layer norms 12,288, Wqkv 6144 x 8192 = 50,331,648, out 37,748,736, router 98,304, experts
    # 16 x 3 x 6144 x 10,752 = 3,170,893,824 -> 3,259,084,800 x 40 = 130,363,392,000; norm_f 6144.
    ("dbrx-instruct", 4, {"full": 40}, 163_840, 131_596_523_520),
    # 40 sliding layers x 2 x 4 x 128 x 2 = 81,920. Params (tied, as Starcoder2Config defaults):
    # embeddings 49,152 x 6144 = 301,989,888; per layer q and o 6144^2 + 6144 = 37,754,880 each,
    # k and v 6144 x 512 + 512 = 3,146,240 each -> 81,802,240; MLP 2 x 6144 x 24,576 + 24,576 + 6144
    # = 302,020,608; two LayerNorms 24,576 -> 383,847,424 x 40 = 15,353,896,960; final norm 12,288.
    ("starcoder2-15b", 1, {"sliding": 40}, 81_920, 15_655_899_136),
    # 40 x 2 x 1 x 128 x 2 = 20,480. Params: wte 301,989,888 + wpe 8192 x 6144 = 50,331,648; per layer
    # ln 12,288 x 2, c_attn 6144 x 6400 + 6400, c_proj 6144^2 + 6144, c_fc 6144 x 24,576 + 24,576,
    # c_proj 24,576 x 6144 + 6144 -> 379,128,064 x 40 = 15,165,122,560; ln_f 12,288.
    ("starcoder", 1, {"full": 40}, 20_480, 15_517_456_384),
]


@pytest.mark.parametrize("name, tp, mix, tp1_bytes, num_params", CATALOG)
def test_catalog_entries_plan_on_h100(name, tp, mix, tp1_bytes, num_params):
    spec = load_model_spec(name)
    assert spec.layer_mix() == mix and spec.num_params == num_params
    opts = CacheOptions(tp=1, kv_dtype_bytes=2)
    assert sum(s.bytes_per_token for _, s in spec.cache_specs(opts)) == tp1_bytes
    report = plan(spec, PlanConfig(gpu="h100", tp=tp)).reports["vllm"]
    assert report.layout.groups and report.capacity.max_num_requests > 0
