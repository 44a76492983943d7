"""hkv runs multi-head latent attention on its paged latent, token-equal with transformers' own greedy
generate: DeepSeek-V2/V3, and the full layers of Kimi-Linear and Ling (bailing_hybrid) between their
Kimi delta attention layers (recurrent state); MiniCPM3's latent is paged per head, as vLLM does.

Tiny random models: hidden 64, 4 heads, kv_lora_rank 24, qk_rope_head_dim 8, qk_nope_head_dim 16,
v_head_dim 12, 3 layers (the first dense, the others 4-expert MoE; hybrids 4). The cache keeps one latent per
token and layer: kv_lora_rank + qk_rope_head_dim = 32 values, 128 bytes in float32, so a block of
4 tokens is a 512-byte page (the planner's MLA spec: one head, no V). Prompts of 23, 37 and 11
tokens run concurrently with chunked prefill (16 tokens per step) over blocks of 4.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache  # noqa: E402

from hkv.runtime.kv_cache.cache_config import CacheConfig  # noqa: E402
from hkv.runtime.kv_cache.kv_cache_manager import KVCacheManager  # noqa: E402
from hkv.runtime.live.live_run import generate  # noqa: E402
from hkv.runtime.live.live_setup import (  # noqa: E402
    RunOptions, UnsupportedModelError, load_runner, open_model, plan_run,
)
from hkv.runtime.live.run_config import RunConfig  # noqa: E402
from hkv.runtime.live.run_report import build_report  # noqa: E402
from hkv.runtime.request import Request  # noqa: E402
from hkv.runtime.scheduler.scheduler import Scheduler, SchedulerConfig  # noqa: E402

from live.test_model_runner import max_logit_error  # noqa: E402
from live.tiny_models import load_reference, random_prompts, reference_greedy  # noqa: E402

CATALOG = Path(__file__).resolve().parents[3] / "model_specs" / "catalog"
KV_BYTES = 1 << 20
MNBT = 16
MAX_NEW = 8
BLOCK = 4
# relative to the largest |logit| (fp32): attention-only as test_model_runner.py; the Kimi delta rule runs
# chunked in transformers and token by token in hkv's decodes (sums in another order), as
# test_recurrent_hybrids.py allows
LOGIT_TOL = {"kimi_linear": 1e-4, "bailing_hybrid": 1e-4}
ATTENTION_LOGIT_TOL = 2e-5
RANK, ROPE, NOPE, V_DIM = 24, 8, 16, 12
LATENT_TOKEN_BYTES = (24 + 8) * 4  # kv_lora_rank + qk_rope_head_dim float32 values: 128

MLA_TINY = dict(
    hidden_size=64, num_attention_heads=4, num_key_value_heads=4, vocab_size=256, intermediate_size=96,
    moe_intermediate_size=32, num_hidden_layers=3, first_k_dense_replace=1, n_routed_experts=4,
    num_experts_per_tok=2, n_shared_experts=1, kv_lora_rank=RANK, qk_rope_head_dim=ROPE,
    qk_nope_head_dim=NOPE, v_head_dim=V_DIM, q_lora_rank=32, max_position_embeddings=256,
    tie_word_embeddings=False, initializer_range=0.5, pad_token_id=0, bos_token_id=1, eos_token_id=2)

# name -> (model_type, overrides): V3 as configured by default (interleaved rope, q LoRA); V3
# with yarn (mscale changes the scaling), rotate-half rope and a plain q_proj; V2 (complex rope)
MLA_FAMILIES: dict[str, tuple[str, dict]] = {
    "deepseek_v3": ("deepseek_v3", dict(n_group=2, topk_group=1, rope_interleave=True)),
    "deepseek_v3_yarn": ("deepseek_v3", dict(
        n_group=2, topk_group=1, rope_interleave=False, q_lora_rank=None,
        rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=64,
                             beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0))),
    "deepseek_v2": ("deepseek_v2", dict(topk_method="greedy")),
    # MLA layers without rope (NoPE, no q LoRA) between Kimi delta attention layers (recurrent state)
    "kimi_linear": ("kimi_linear", dict(
        num_hidden_layers=4, layer_types=["linear_attention", "full_attention"] * 2,
        mlp_layer_types=["dense", "sparse", "sparse", "sparse"], num_experts=4, num_experts_per_token=2,
        num_shared_experts=1, num_expert_group=1, topk_group=1, q_lora_rank=None, linear_num_heads=2,
        linear_head_dim=16, linear_conv_kernel_dim=4)),
    # Ling / Ring: the same hybrid; vLLM sizes its KDA state by num_attention_heads x head_dim, transformers
    # by linear_num_heads x linear_head_dim (a real checkpoint has one width: here both 4 x 8)
    "bailing_hybrid": ("bailing_hybrid", dict(
        num_hidden_layers=4, layer_types=["linear_attention", "full_attention"] * 2,
        mlp_layer_types=["dense", "sparse", "sparse", "sparse"], num_experts=4, num_experts_per_token=2,
        num_shared_experts=1, num_expert_group=1, topk_group=1, q_lora_rank=None, head_dim=8, linear_num_heads=4,
        linear_head_dim=8, linear_conv_kernel_dim=4, short_conv_kernel_size=4)),
    # a latent in the config, decompressed per head in the cache (as vLLM pages MiniCPM3: V padded to K)
    "minicpm3": ("minicpm3", dict(scale_emb=2, dim_model_base=32, scale_depth=1.4)),
}


def save_mla_model(family: str, directory, seed: int = 0):
    model_type, overrides = MLA_FAMILIES[family]
    config = AutoConfig.for_model(model_type, **{**MLA_TINY, **overrides})
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(copy.deepcopy(config)).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module", params=list(MLA_FAMILIES))
def tiny_mla(request, tmp_path_factory):
    path = save_mla_model(request.param, tmp_path_factory.mktemp(request.param))
    return request.param, path, load_reference(path)


def make_runner(path, **options):
    files = open_model(str(path))
    the_plan = plan_run(files, RunOptions(block_size=BLOCK, max_num_batched_tokens=MNBT, max_model_len=128,
                                          **options), KV_BYTES)
    return the_plan, load_runner(files, the_plan, torch.device("cpu"))


def test_mla_matches_generate(tiny_mla):
    family, path, reference = tiny_mla
    the_plan, runner = make_runner(path)
    prompts = random_prompts((23, 37, 11))
    config = RunConfig(max_new_tokens=MAX_NEW, max_num_batched_tokens=MNBT, record_logits=True,
                       check_tables=True)
    outcome = generate(runner, prompts, config)
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, MAX_NEW), family
        assert max_logit_error(reference, generation) < LOGIT_TOL.get(family, ATTENTION_LOGIT_TOL), family
    # prefills spanned several steps (37 tokens = 10 blocks of 4, 3 chunks of 16) mixed with decodes
    assert outcome.timings.num_steps > sum(map(len, prompts)) // MNBT + MAX_NEW - 1
    report = build_report(the_plan.primary.layout, KV_BYTES, runner.kv_cache.num_bytes, (37, MAX_NEW), config,
                          outcome)
    assert report.agree, [c for c in report.checks if not c.ok]


@pytest.mark.parametrize("layout, blocks", [("vllm", (128, 128)), ("partitioned", (4, 4))])
def test_kimi_linear_other_layouts_match(tmp_path, layout, blocks):
    """vllm: the latent's block grows to 128 tokens so that its page (128 x 128 bytes) holds a KDA
    state (padded to the same 16 KiB); partitioned: each kind its own pool."""
    path = save_mla_model("kimi_linear", tmp_path)
    reference = load_reference(path)
    the_plan, runner = make_runner(path, layout=layout)
    groups = the_plan.primary.layout.groups
    assert tuple(g.block_size for g in groups) == blocks
    (latent,) = [g for g in groups if getattr(g.spec, "is_mla", False)]
    assert latent.page_size_bytes == latent.block_size * LATENT_TOKEN_BYTES
    prompts = random_prompts((61, 11), seed=3)
    outcome = generate(runner, prompts, RunConfig(max_new_tokens=6, max_num_batched_tokens=MNBT, check_tables=True))
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, 6), layout


# Hits by hand: prompt 0 is 24 shared + 3 tokens. Prompt 1 (24 shared + 2) hits its 6 full blocks
# of 4, prompt 2 (the first 9 shared) 2 blocks: 32 tokens. The hybrids' state checkpoints are where a step
# ended on a block: steps [0, 16) and [16, 27) leave 16 and 24, so prompt 1 hits 24, prompt 2 none.
PREFIX_HITS = {"kimi_linear": 24, "bailing_hybrid": 24}


def test_mla_prefix_cache_hit_matches(tiny_mla):
    family, path, reference = tiny_mla
    _, runner = make_runner(path)
    shared = random_prompts((24,), seed=7)[0]
    prompts = [shared + [40, 41, 42], shared + [50, 51], shared[:9]]
    # one request at a time: the later ones find the first one's cached latent blocks
    config = RunConfig(max_new_tokens=5, max_num_batched_tokens=MNBT, max_num_seqs=1, check_tables=True)
    outcome = generate(runner, prompts, config)
    assert outcome.cache.num_hit_tokens == PREFIX_HITS.get(family, 24 + 8)
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, 5), family


def test_mla_page_holds_one_latent_per_token(tmp_path):
    """The plan's MLA page, the bytes allocated, and what a prefill writes into the pages: the
    normalized latent then the rope key, exactly transformers' own cache entries."""
    path = save_mla_model("deepseek_v3", tmp_path)
    the_plan, runner = make_runner(path)
    layout = the_plan.primary.layout
    (group,) = layout.groups
    (pool,) = layout.pools
    assert group.spec.is_mla and group.layer_ids == (0, 1, 2)
    assert group.page_size_bytes == BLOCK * LATENT_TOKEN_BYTES == 512
    assert pool.bytes_per_block == 3 * 512  # one page per layer
    assert runner.kv_cache.num_bytes == pool.num_blocks * 3 * 512
    caches = runner.kv_cache.layers[1]
    assert caches.key_cache.shape == (pool.num_blocks, BLOCK, 1, RANK + ROPE)
    assert caches.value_cache.data_ptr() == caches.key_cache.data_ptr()  # one latent, no V
    assert caches.key_cache.stride()[:2] == (512 // 4, RANK + ROPE)  # a page: 4 tokens x 32 floats

    prompt = random_prompts((13,), seed=11)[0]  # 4 blocks, the last one partly filled
    kv = KVCacheManager(layout, CacheConfig(enable_caching=False))
    scheduler = Scheduler(kv, SchedulerConfig(MNBT, 1))
    request = Request("0", prompt, max_output_len=1)
    scheduler.add_request(request)
    runner.reset()
    runner.execute(scheduler.schedule())
    table = kv.block_ids(request)[0]
    assert len(table) == 4
    expected = DynamicCache()
    with torch.no_grad():
        load_reference(path)(torch.tensor([prompt]), cache=expected, use_cache=True)
    for layer in range(3):
        paged = runner.kv_cache.layers[layer].key_cache[torch.tensor(table)].flatten(0, 1)[:13, 0]
        entries = expected.layers[layer]
        latent = torch.cat((entries.keys[0, 0], entries.values[0, 0]), dim=-1)  # kv_nope, k_rot
        assert latent.shape == (13, RANK + ROPE)
        torch.testing.assert_close(paged, latent, rtol=1e-5, atol=1e-5)


def checkpoint_dir(tmp_path, catalog_name: str):
    """The catalog's config.json of a real checkpoint, with a one-tensor stand-in for its weights."""
    from safetensors.torch import save_file

    shutil.copy(CATALOG / f"{catalog_name}.json", tmp_path / "config.json")
    save_file({"x": torch.zeros(1)}, str(tmp_path / "model.safetensors"))
    return tmp_path


@pytest.mark.parametrize("catalog_name, num_latent_layers", [
    ("deepseek-v3", 61), ("kimi-linear-48b-a3b-instruct", 7)])
def test_mla_checkpoint_configs_open(tmp_path, catalog_name, num_latent_layers):
    """Real MLA configs are no longer refused: their latent is kv_lora_rank 512 + qk_rope_head_dim 64."""
    files = open_model(str(checkpoint_dir(tmp_path, catalog_name)))
    latent = [layer for layer in files.spec.cache_layers if getattr(layer, "is_mla", False)]
    assert len(latent) == num_latent_layers
    assert {(layer.head_dim, layer.head_dim_v) for layer in latent} == {(576, 0)}


@pytest.mark.parametrize(("catalog_name", "missing_piece"), [
    ("deepseek-v3.2", "keeps an index-key cache of its own"),
    ("glm-5", "keeps an index-key cache of its own"),
    ("minimax-m3", "keeps an index-key cache of its own"),
    ("deepseek-v4-flash", "compressed attention .* has no binding"),
])
def test_sparse_and_compressed_attention_are_refused_naming_the_piece(tmp_path, catalog_name, missing_piece):
    with pytest.raises(UnsupportedModelError, match=missing_piece):
        open_model(str(checkpoint_dir(tmp_path, catalog_name)))


def test_decompressed_latent_pages_hold_per_head_kv(tmp_path):
    """MiniCPM3 as vLLM pages it: per head K of qk_nope + qk_rope = 24 values and V of 12 padded to
    24, 4 heads: 2 x 4 x 24 x 4 bytes = 768 bytes per token and layer; the padding stays zero."""
    path = save_mla_model("minicpm3", tmp_path)
    the_plan, runner = make_runner(path)
    (group,) = the_plan.primary.layout.groups
    assert not group.spec.is_mla and (group.spec.num_kv_heads, group.spec.head_dim, group.spec.head_dim_v) == (
        4, NOPE + ROPE, NOPE + ROPE)
    assert group.page_size_bytes == BLOCK * 768
    for pool in runner.kv_cache.raw_pools.values():  # allocated uninitialized: zero it to see what is written
        pool.zero_()
    outcome = generate(runner, random_prompts((9,), seed=3), RunConfig(max_new_tokens=2, max_num_batched_tokens=MNBT))
    assert outcome.generations[0].finish_reason == "length"
    values = runner.kv_cache.layers[0].value_cache  # [num_blocks, 4, heads, 24]
    written = values[:, :, :, :V_DIM].abs().sum(dim=(1, 2, 3)) > 0  # the blocks the request wrote
    assert int(written.sum()) == 3  # 10 tokens stored (9 + the first output) in blocks of 4
    assert float(values[written][..., V_DIM:].abs().max()) == 0.0
