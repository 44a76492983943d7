"""vLLM 0.33.0: the default release, and each rule that changed from 0.32.0 (docs/vllm_0_33.md),
with the expected figures worked by hand from vLLM's code (the 0.33.0 wheel) in the comments.

Qwen3-Next-80B-A3B, by hand (12 full-attention + 36 gated-delta-net layers, bf16):
  attention page per token and layer: 2 (K, V) x 2 kv heads x 256 x 2 B = 2,048 B (TP 4: one kv
  head per rank, 1,024 B);
  GDN state: conv (2 x 16 x 128 + 32 x 128) x (4 - 1) x 2 B = 49,152 B + SSM 32 x 128 x 128 x 2 B
  = 1,048,576 B, 1,097,728 B in all (TP 4: 12,288 + 262,144 = 274,432 B).
vLLM grows the attention block in steps of k until a page holds a state: k = 16 (FlashAttention's
kernel block) in 0.32; 0.33 takes k = lcm(16, 64) = 64 where the GDN layers export prefill
checkpoints (FlashInfer's GDN prefill, on an H100 and a B200, not on an A100).
"""

from dataclasses import fields, replace

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.budget.budget_constants import SHIPPED
from hkv.planner.budget.profile import profile_terms
from hkv.planner.engines.vllm.gdn_checkpoints import gdn_checkpoint_alignment
from hkv.planner.engines.vllm.rules import DEFAULT_VLLM_VERSION, LOG_FORMAT_VERSIONS, VllmRules
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

GIB = 2**30
QWEN3_NEXT = load_model_spec("qwen3-next-80b-a3b")
LLAMA_8B = load_model_spec("llama-3.1-8b-instruct")  # hidden 4096, vocab 128,256


def test_0_33_0_is_the_default_and_current():
    assert DEFAULT_VLLM_VERSION == "0.33.0" and LOG_FORMAT_VERSIONS["current"] == "0.33.0"
    assert PlanConfig().vllm_rules().version == (0, 33, 0)
    assert PlanConfig(vllm_log="current").vllm_rules().name == "0.33.0"
    assert PlanConfig(vllm_version="0.32.0").vllm_rules().name == "0.32.0"  # older releases stay selectable


def test_exactly_four_rules_changed_from_0_32():
    old, new = VllmRules.for_version("0.32.0"), VllmRules.for_version("0.33.0")
    changed = {f.name: (getattr(old, f.name), getattr(new, f.name)) for f in fields(VllmRules)
               if getattr(old, f.name) != getattr(new, f.name)}
    # 0.26-0.32's V2 dummy sampler returns early and keeps the bf16 logits alone; 0.33's sampler makes
    # its fp32 copy again (gpu/sample/sampler.py), besides the warmup pass
    assert changed == {"version": ((0, 32, 0), (0, 33, 0)), "v2_sampler_warmup_pass": (False, True),
                       "gdn_prefill_checkpoints": (False, True), "gb10_small_batch_tier": (False, True),
                       "v2_sampler_copies_logits": (False, True)}


def _vllm_layout(model, **options):
    cfg = PlanConfig(available_kv_memory_bytes=20 * GIB, max_model_len=8192, max_num_batched_tokens=8192,
                     primary_layout="vllm", **options)
    return plan(model, cfg).reports["vllm"].layout


def _full_block(layout) -> int:
    return next(g.block_size for g in layout.groups if g.kind.value == "full")


def _state_blocks(layout) -> set[int]:
    return {b for g, b in zip(layout.groups, layout.blocks_per_request(8192)) if g.kind.value == "recurrent"}


# (release, gpu, tp, prefix caching, attention block, state blocks per GDN group, blocks per 8,192-token request)
GDN_CASES = [
    # 16 x cdiv(1,097,728, 16 x 2,048 = 32,768) = 16 x 34 = 544; cdiv(8,192, 544) = 16 + 3 groups x 2 = 22
    ("0.32.0", "h100", 1, None, 544, 2, 22),
    # 64 x cdiv(1,097,728, 64 x 2,048 = 131,072) = 64 x 9 = 576; cdiv(8,192, 576) = 15 + 3 x (2 + 1) = 24
    ("0.33.0", "h100", 1, None, 576, 3, 24),
    ("0.33.0", "b200", 1, None, 576, 3, 24),  # SM100 at head_k_dim 128: FlashInfer's GDN prefill too
    ("0.33.0", "a100-80gb", 1, None, 544, 2, 22),  # SM80: FLA's Triton prefill, no checkpoints
    # no prefix caching (mode 'none'): no alignment, one state per group: 16 + 3 x 1 = 19
    ("0.33.0", "h100", 1, False, 544, 1, 19),
    # TP 4: 16 x cdiv(274,432, 16,384) = 16 x 17 = 272; cdiv(8,192, 272) = 31 + 3 x 2 = 37
    ("0.32.0", "h100", 4, None, 272, 2, 37),
    # 64 x cdiv(274,432, 65,536) = 64 x 5 = 320; cdiv(8,192, 320) = 26 + 3 x 3 = 35
    ("0.33.0", "h100", 4, None, 320, 3, 35),
]


@pytest.mark.parametrize("version, gpu, tp, prefix, block, states, per_request", GDN_CASES)
def test_gdn_prefill_checkpoints(version, gpu, tp, prefix, block, states, per_request):
    layout = _vllm_layout(QWEN3_NEXT, gpu=gpu, tp=tp, enable_prefix_caching=prefix, vllm_version=version)
    assert _full_block(layout) == block
    assert _state_blocks(layout) == {states}
    assert sum(layout.blocks_per_request(8192)) == per_request


def test_gdn_checkpoints_need_qwens_layer_class_and_a_cuda_gpu():
    cfg = PlanConfig(gpu="h100")
    assert gdn_checkpoint_alignment(QWEN3_NEXT, cfg, prefix_caching=True) == 64
    assert gdn_checkpoint_alignment(QWEN3_NEXT, cfg, prefix_caching=False) is None
    assert gdn_checkpoint_alignment(QWEN3_NEXT, replace(cfg, cpu_engine=True), prefix_caching=True) is None
    # OLMo hybrid's own GDN class always runs FLA and exports no checkpoints.
    assert gdn_checkpoint_alignment(replace(QWEN3_NEXT, family="olmo_hybrid"), cfg, prefix_caching=True) is None


def test_qwen3_6_public_log_case_under_0_33():
    # tests/planner/test_qwen3_5.py's 0.24 log case (fp8 KV, 5.98 GiB, 131,072 tokens): the float32
    # state is 49,152 + 2,097,152 = 2,146,304 B, a page per token 2 x 2 x 256 x 1 B = 1,024 B.
    # 0.32: 16 x cdiv(2,146,304, 16,384) = 2,096. 0.33: 64 x cdiv(2,146,304, 65,536) = 64 x 33 = 2,112;
    # a block is 10 slots x 2,112 x 1,024 B = 21,626,880 B: int(5.98 GiB) = 6,420,906,721 B holds 296;
    # a request holds cdiv(131,072, 2,112) = 63 + 3 x 3 = 72: 296 / 72 = 4.1111 x 131,072 = 538,851.
    cfg = PlanConfig(available_kv_memory_bytes=int(5.98 * GIB), kv_cache_dtype="fp8", max_model_len=131072,
                     primary_layout="vllm")
    report = plan(load_model_spec("qwen3.6-35b-a3b"), cfg).reports["vllm"]
    assert _full_block(report.layout) == 2112
    assert report.layout.pools[0].num_blocks == 296 and sum(report.layout.blocks_per_request(131072)) == 72
    assert report.log_lines == ("GPU KV cache size: 538,851 tokens, Maximum concurrency for 131,072 tokens "
                                "per request: 4.11x",)


# The profile's activation term for Llama-3.1-8B at 8,192 batched tokens and 1,024 sequences:
# the kept hidden states 8,192 x 4,096 x 2 = 67,108,864 B plus the larger of the forward
# (771,751,936 B, tests/planner/budget/test_profile_formulas.py) and the dummy sampler on
# 1,024 x 128,256 = 131,334,144 logits: greedy 6 B each = 788,004,864; 0.33's warmup pass through
# FlashInfer (bf16 logits 2 + fp32 copy 4 + top-k masked copy 4 + softmax 4 = 14 B) = 1,838,678,016.
GREEDY = 788_004_864 + 67_108_864
FLASHINFER = 1_838_678_016 + 67_108_864
# 0.32: the bf16 logits alone (1,024 x 128,256 x 2 = 262,668,288 B), below the forward's 771,751,936
LOGITS_ONLY = 771_751_936 + 67_108_864
SAMPLER_CASES = [
    ("0.32.0", {"gpu": "h100"}, LOGITS_ONLY),
    ("0.33.0", {"gpu": "h100"}, FLASHINFER),
    ("0.33.0", {"gpu": "a10"}, FLASHINFER),  # SM86: FlashInfer's sampler runs from SM80
    ("0.33.0", {"gpu": "t4"}, GREEDY),  # SM75: Triton top-k/top-p in place, noise drawn in the kernel
    ("0.33.0", {"gpu": "mi300x"}, GREEDY),  # ROCm: no FlashInfer sampler
    ("0.33.0", {"gpu": None}, FLASHINFER),  # no GPU named: a CUDA data-center GPU is assumed
    ("0.33.0", {"gpu": None, "cpu_engine": True}, GREEDY),  # the CPU platform skips the warmup pass
]


@pytest.mark.parametrize("version, device, activation", SAMPLER_CASES)
def test_v2_dummy_sampler_warmup_pass(version, device, activation):
    # the fitted V2 dense-profile term set to 0: this checks the sampler paths read from vLLM's code
    no_fit = replace(SHIPPED, v2_dense_layer_tokens=0.0)
    cfg = PlanConfig(vllm_version=version, max_num_seqs=1024, available_kv_memory_bytes=GIB, budget_constants=no_fit,
                     **device)
    assert profile_terms(LLAMA_8B, cfg, 8192)[0].bytes == activation


@pytest.mark.parametrize("version, gpu, mnbt, max_num_seqs", [
    ("0.32.0", "gb10", 8192, 1024),  # 119.63 GiB >= 70 GiB, not an A100
    ("0.33.0", "gb10", 2048, 256),  # compute capability 12.1 stays on the small tier
    ("0.33.0", "h100", 8192, 1024),
    ("0.33.0", "rtx-pro-6000", 8192, 1024),  # SM120 but not 12.1: 94.97 GiB keeps the H100 tier
])
def test_gb10_batch_defaults(version, gpu, mnbt, max_num_seqs):
    budget = compute_memory_budget(LLAMA_8B, PlanConfig(gpu=gpu, vllm_version=version))
    assert (budget.max_num_batched_tokens, budget.max_num_seqs) == (mnbt, max_num_seqs)


@pytest.mark.parametrize("args, version, block", [
    ([], "0.33.0", 320), (["--vllm-version", "0.33.0"], "0.33.0", 320), (["--vllm-log", "current"], "0.33.0", 320),
    (["--vllm-version", "0.32.0"], "0.32.0", 272),
])
def test_cli_plans_qwen3_next_on_h100(args, version, block):
    import json

    from hkv.cli.main import app
    from typer.testing import CliRunner
    result = CliRunner().invoke(app, ["plan", "qwen3-next-80b-a3b", "--gpu", "h100", "--tp", "4", "--max-model-len",
                                      "8192", "--format", "json", *args])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["vllm_version"] == version and doc["layouts"]["vllm"]["block_size"] == block
