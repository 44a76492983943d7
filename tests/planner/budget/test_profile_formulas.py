"""Each memory-profile formula on small cases worked out by hand, and the release switches.

Capture-size counts are checked against the counts real logs printed ("Profiling CUDA graph
memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)").
"""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.budget_term import BudgetTerm
from hkv.planner.budget.cudagraph_estimate import CudagraphEstimate, capture_sizes, cudagraph_estimate
from hkv.planner.budget.encoder_profile import encoder_outputs_bytes
from hkv.planner.budget.model_runner import graph_estimate_applies, uses_v2_runner
from hkv.planner.budget.budget_constants import BudgetConstants, GraphBytes
from hkv.planner.budget.non_torch import NonTorchSetup
from hkv.planner.budget.profile import Band, profile_terms
from hkv.planner.budget.profile_activation import ForwardShape, activation_peak
from hkv.planner.budget.sampler_peak import SamplerPath, sampler_paths, sampler_profile
from hkv.planner.engines.vllm.rules import VllmRules
from hkv.planner.plan_config import PlanConfig

GIB = 2**30
MIB = 2**20


@pytest.mark.parametrize(("path", "per_element"), [
    ("sort", 2 + 4 + 4 + 8 + 20),  # bf16 logits, fp32 copy, sorted, int64 idx, sort scratch = 38
    ("flashinfer", 2 + 4 + 4 + 4),  # bf16 logits, fp32 copy, top-k masked copy, probs = 14
    ("in_place", 2 + 4 + 4 + 4),  # bf16 logits, fp32 copy, probs, exponential noise = 14
    ("greedy", 2 + 4),  # V2's greedy dummy batch: logits and one fp32 copy = 6
    ("logits", 2),  # V2 0.26-0.32: the bf16 logits alone
])
def test_sampler_bytes_per_logit(path: SamplerPath, per_element: int) -> None:
    profile = sampler_profile(8192, 1024, 1000, 2, path)
    assert profile.rows == 1024  # min(8192 batched tokens, 1024 sequences)
    assert profile.bytes_per_element == per_element
    assert profile.peak_bytes == 1024 * 1000 * per_element  # e.g. 38,912,000 when sorting


def test_sampler_rows_are_capped_by_batched_tokens() -> None:
    # 64 batched tokens make at most 64 dummy requests: 64 x 500 x 14 = 448,000 bytes
    assert sampler_profile(64, 256, 500, 2, "in_place").peak_bytes == 448_000


@pytest.mark.parametrize(("version", "installed", "v2", "paths"), [
    ("0.10.2", None, False, ("sort", "flashinfer")),  # pip or image? both stay possible
    ("0.11.0", True, False, ("flashinfer",)),  # the vllm-openai image: FlashInfer's sampler
    ("0.11.0", False, False, ("sort",)),
    ("0.11.1", True, False, ("sort",)),  # 0.11.1 made FlashInfer's sampler opt-in
    ("0.16.0", None, False, ("sort",)),
    ("0.17.0", None, False, ("in_place",)),
    ("0.32.0", True, True, ("greedy",)),
])
def test_sampler_paths_by_release_and_install(version: str, installed: bool | None, v2: bool,
                                              paths: tuple[SamplerPath, ...]) -> None:
    rules = VllmRules.for_version(version)
    assert sampler_paths(sorts_vocab=rules.sampler_sorts_vocab, flashinfer_by_default=rules.flashinfer_sampler_default,
                         flashinfer_installed=installed, v2_runner=v2) == paths


@pytest.mark.parametrize(("version", "flashinfer_warmup", "path"), [
    ("0.25.0", False, "greedy"),  # apply_sampling_params copies the logits to fp32 unconditionally
    ("0.26.0", False, "logits"),  # works on the logits in place
    ("0.27.1", False, "logits"),  # _requires_logits_processing: no dummy request needs it
    ("0.32.0", False, "logits"),  # needs_logits_processing all False
    ("0.33.0", False, "greedy"),  # the warmup pass's processors need the fp32 copy again
    ("0.33.0", True, "flashinfer"),
])
def test_v2_dummy_sampler_path_by_release(version: str, flashinfer_warmup: bool, path: SamplerPath) -> None:
    """V2's dummy sampler (v1/worker/gpu/sample/sampler.py `apply_sampling_params`), 0.25-0.33."""
    rules = VllmRules.for_version(version)
    assert sampler_paths(sorts_vocab=rules.sampler_sorts_vocab, flashinfer_by_default=rules.flashinfer_sampler_default,
                         flashinfer_installed=None, v2_runner=True,
                         v2_flashinfer_warmup=flashinfer_warmup and rules.v2_sampler_warmup_pass,
                         v2_copies_logits=rules.v2_sampler_copies_logits) == (path,)


def test_q004_qwen25_7b_awq_v026_profile_peak() -> None:
    """vLLM 0.26.0's V2 profile of Qwen2.5-7B-Instruct-AWQ, `vllm serve` on a 16 GiB RTX 4080
    (EngineArgs.get_batch_defaults: 2,048 batched tokens, 256 sequences), as the code reads
    (gpu/model_runner.py `profile_run` -> `_dummy_run(2048, skip_attn=True, is_profile=True)`
    -> `_dummy_sampler_run` on 256 rows; gpu/sample/sampler.py keeps the fp16 logits only).
    The log printed 1.04 GiB: the code accounts for 0.24 of it (see the report; not fitted)."""
    shape = ForwardShape(3584, 18944, 2)  # AWQ's Marlin GEMMs keep fp16 activations
    assert shape.kept_bytes(2048) == 2048 * 3584 * 2 == 14_680_064
    assert shape.forward_extra_bytes(2048) == 2048 * (3584 + 3 * 18944) * 2 == 247_463_936
    sampler = sampler_profile(2048, 256, 152064, 2, "logits")
    assert sampler.peak_bytes == 256 * 152064 * 2 == 77_856_768
    peak = activation_peak(shape, 2048, sampler.peak_bytes)
    assert (peak.bytes, peak.dominant) == (14_680_064 + 247_463_936, "forward")  # 262,144,000 B = 0.244 GiB
    # the log's arithmetic: the KV budget leaves the 0.48 GiB of graphs out (V2 estimates 0 at 0.26)
    assert round(14.39 - 5.29 - 1.04 - 0.06, 2) == 8.0
    assert not graph_estimate_applies(VllmRules.for_version("0.26.0"), v2_runner=True, enforce_eager=False)


def test_dense_forward_live_set() -> None:
    # hidden 64, intermediate 256, TP 2, bf16: normed input 64 + gate_up 2 x 128 + act 128 = 448
    # elements = 896 bytes per token besides the kept hidden state (64 x 2 = 128 bytes)
    shape = ForwardShape(64, 256, 2, tp=2)
    assert shape.dense_bytes_per_token() == 896
    assert shape.forward_extra_bytes(100) == 89_600
    assert shape.kept_bytes(100) == 12_800


def test_moe_forward_live_set() -> None:
    # hidden 64, 4 experts per token of intermediate 256, TP 1, bf16: workspace13 max(512, 64) = 512
    # and workspace2 256 per copy, 4 copies = 3,072, plus the normed input 64 = 3,136 elements = 6,272 B
    shape = ForwardShape(64, 0, 2, tp=1, num_experts_per_tok=4, moe_intermediate_size=256)
    assert shape.moe_bytes_per_token() == 6272
    assert shape.forward_extra_bytes(10) == 62_720  # the MoE set is larger than the (empty) dense one


def test_activation_is_kept_plus_encoder_plus_the_larger_phase() -> None:
    peak = activation_peak(ForwardShape(64, 256, 2, tp=2), 100, sampler_bytes=50_000, encoder_bytes=7)
    assert (peak.forward_extra_bytes, peak.dominant) == (89_600, "forward")
    assert peak.bytes == 12_800 + 7 + 89_600
    assert activation_peak(ForwardShape(64, 256, 2, tp=2), 100, sampler_bytes=90_000).bytes == 12_800 + 90_000


def test_encoder_outputs() -> None:
    # Qwen3.5's largest image is 16,384 tokens: max(8192, 16384) x hidden 4096 x 2 bytes = 128 MiB
    assert encoder_outputs_bytes(("Qwen3_5ForConditionalGeneration",), "qwen3_5_text", 8192, 4096, 2) == 128 * MIB
    # an unknown processor: the budget is max_num_batched_tokens; a text-only class: nothing
    assert encoder_outputs_bytes(("Mistral3ForConditionalGeneration",), "mistral3", 2048, 10, 2) == 40_960
    assert encoder_outputs_bytes(("LlamaForCausalLM",), "llama", 8192, 4096, 2) == 0


@pytest.mark.parametrize(("max_num_seqs", "piecewise", "full", "record"), [
    (256, 51, 35, "r001"),  # max capture min(2 x 256, 512) = 512: 1, 2, 4, 8..248 (31), 256..512 (17)
    (128, 35, 19, "r002"),  # max 256: 3 + 31 + 1; FULL up to 128: 3 + 16
    (32, 11, 7, "r007"),  # max 64: 1, 2, 4, 8..64 (8); FULL up to 32: 3 + 4
    (1024, 51, 51, "r009"),  # max 512; FULL up to min(1024, 512)
])
def test_capture_sizes_match_logged_counts(max_num_seqs: int, piecewise: int, full: int, record: str) -> None:
    estimate = cudagraph_estimate(10, max_num_seqs, 8192, moe=False)
    assert (estimate.piecewise_graphs, estimate.full_graphs) == (piecewise, full), record


def test_capture_sizes_capped_by_batched_tokens() -> None:
    assert capture_sizes(256, 20) == (1, 2, 4, 8, 16)


# Constants of the tests' own choosing: the formulas are checked, not the fitted values.
CONSTANTS = BudgetConstants(
    context_bytes=int(0.13 * GIB), consumed_context_bytes=int(0.4 * GIB),
    comm_nvlink_bytes_per_tp_doubling=int(0.42 * GIB), comm_pcie_bytes_per_tp_doubling=int(0.05 * GIB),
    linear_attention_bytes=int(0.45 * GIB), unified_memory_bytes=int(1.5 * GIB),
    graph=GraphBytes(4 * MIB, 2.5),
    residual_low_bytes=GIB // 4, residual_high_bytes=GIB // 2)


def test_estimate_bytes() -> None:
    # 10 layers, 3 piecewise + 2 full graphs, 1,000 live bytes per token:
    # 10 x (4 MiB + 2.5 tokens x 1,000 B x (5 graphs - 2 modes)) = 10 x (4,194,304 + 7,500)
    assert CudagraphEstimate(10, 3, 2, moe=False, live_bytes_per_token=1000).bytes_with(CONSTANTS) == 42_018_040
    # one graph per mode: the first captures alone, whatever the live set
    assert CudagraphEstimate(2, 1, 1, moe=True, live_bytes_per_token=10**6).bytes_with(CONSTANTS) == 2 * 4 * MIB
    assert CudagraphEstimate(5, 0, 0, moe=False, live_bytes_per_token=1000).bytes_with(CONSTANTS) == 0
    # a calibration's scale multiplies the whole estimate
    scaled = replace(CONSTANTS, calibration_graph_scale=1.5)
    assert CudagraphEstimate(10, 3, 2, moe=False, live_bytes_per_token=1000).bytes_with(scaled) == 63_027_060


@pytest.mark.parametrize(("setup", "gib"), [
    (NonTorchSetup(1, consumed_accounting=False, nvlink=True, linear_attention=False), 0.13),
    (NonTorchSetup(2, consumed_accounting=False, nvlink=True, linear_attention=False), 0.13 + 0.42),  # one doubling
    (NonTorchSetup(4, consumed_accounting=True, nvlink=True, linear_attention=False), 0.4 + 2 * 0.42),
    (NonTorchSetup(8, consumed_accounting=True, nvlink=False, linear_attention=False), 0.4 + 3 * 0.05),  # PCIe
    (NonTorchSetup(1, consumed_accounting=False, nvlink=True, linear_attention=True), 0.13 + 0.45),
    # unified memory: the host's share and the pinned buffers; a discrete card's pinned bytes do not count
    (NonTorchSetup(1, consumed_accounting=True, nvlink=False, linear_attention=True, unified_memory=True,
                   pinned_host_bytes=GIB // 4), 0.4 + 0.45 + 1.5 + 0.25),
    (NonTorchSetup(1, consumed_accounting=True, nvlink=False, linear_attention=False, pinned_host_bytes=GIB), 0.4),
])
def test_non_torch(setup: NonTorchSetup, gib: float) -> None:
    assert setup.bytes(CONSTANTS) == pytest.approx(gib * GIB, abs=4)  # each part truncated to whole bytes


def test_a_calibration_is_a_signed_term_of_its_own() -> None:
    model = load_model_spec("llama-3.1-8b-instruct")
    constants = replace(CONSTANTS, calibration_offset_bytes=-GIB, calibration_note="calibrated on x.log",
                        calibrated_residual_low_bytes=GIB // 8, calibrated_residual_high_bytes=GIB // 4)
    terms = profile_terms(model, PlanConfig(gpu="h100", vllm_version="0.11.0", budget_constants=constants), 8192)
    assert [t.name for t in terms] == ["activation", "cudagraph", "non_torch", "calibration"]
    assert terms[2].bytes == int(0.13 * GIB) and terms[2].is_exact  # the calibration carries the band
    assert (terms[3].bytes, terms[3].low_bytes, terms[3].high_bytes) == (-GIB, -GIB - GIB // 8, -GIB + GIB // 4)


@pytest.mark.parametrize(("version", "sorts", "runner", "v2_graphs", "consumed"), [
    ("0.11.0", True, "none", False, False),
    ("0.16.0", True, "none", False, False),
    ("0.17.0", False, "none", False, False),
    ("0.24.0", False, "none", False, False),
    ("0.25.0", False, "dense", False, False),
    ("0.27.1", False, "dense", False, True),
    ("0.28.0", False, "dense", False, True),
    ("0.29.0", False, "all", True, True),  # config/vllm.py use_v2_model_runner: no architecture test
    ("0.32.0", False, "all", True, True),
])
def test_release_switches(version: str, sorts: bool, runner: str, v2_graphs: bool, consumed: bool) -> None:
    rules = VllmRules.for_version(version)
    assert (rules.sampler_sorts_vocab, rules.v2_model_runner, rules.v2_estimates_cudagraphs,
            rules.profile_consumed_accounting) == (sorts, runner, v2_graphs, consumed)


def test_runner_choice_and_graph_estimate() -> None:
    r027, r029, r032 = (VllmRules.for_version(v) for v in ("0.27.1", "0.29.0", "0.32.0"))
    assert uses_v2_runner(r027, moe=False, has_state=False)
    assert not uses_v2_runner(r027, moe=True, has_state=False)
    assert not uses_v2_runner(r027, moe=False, has_state=True)
    assert uses_v2_runner(r029, moe=True, has_state=True)  # 0.29 dropped _is_default_v2_model_runner_model
    assert uses_v2_runner(r032, moe=True, has_state=True)
    # 0.27.1's V2 runner returned 0 from profile_cudagraph_memory (log r011: no estimate in the figure)
    assert not graph_estimate_applies(r027, v2_runner=True, enforce_eager=False)
    assert graph_estimate_applies(r027, v2_runner=False, enforce_eager=False)
    assert graph_estimate_applies(r029, v2_runner=True, enforce_eager=False)
    assert not graph_estimate_applies(r032, v2_runner=True, enforce_eager=True)
    assert not graph_estimate_applies(VllmRules.for_version("0.19.0"), v2_runner=False, enforce_eager=False)


def test_band_arithmetic() -> None:
    term = Band(0.5, 0.25, abs_low=10, abs_high=100).term("x", 1000, "n")
    assert term == BudgetTerm("x", 1000, "estimate", 490, 1350, "n")


def test_profile_terms_on_llama_8b() -> None:
    model = load_model_spec("llama-3.1-8b-instruct")  # hidden 4096, intermediate 14336, vocab 128256, 32 layers
    old = profile_terms(model, PlanConfig(gpu="h100", vllm_version="0.11.0", max_num_seqs=1024,
                                          budget_constants=CONSTANTS), 8192)
    # 0.11: the sort sampler, 1024 x 128256 x 38 = 4,990,697,472, beats the forward's
    # 8192 x (4096 + 3 x 14336) x 2 = 771,751,936; plus the kept 8192 x 4096 x 2 = 67,108,864
    assert old[0].bytes == 4_990_697_472 + 67_108_864  # 4.71 GiB; the llm-d log r022 printed 4.76
    assert old[1].bytes == 0  # 0.11 does not subtract a graph estimate
    assert old[2].bytes == int(0.13 * GIB)
    # the non-torch term carries the residual band: 0.25 GiB below (floored at 0), 0.5 GiB above
    assert (old[2].low_bytes, old[2].high_bytes) == (0, int(0.13 * GIB) + GIB // 2)
    new = profile_terms(model, PlanConfig(gpu="h100", vllm_version="0.32.0", max_num_seqs=1024,
                                          budget_constants=CONSTANTS), 8192)
    # 0.32 runs Llama on the V2 runner, whose dummy sampler keeps the bf16 logits alone (0.26-0.32):
    # 1024 x 128256 x 2 = 262,668,288 < the forward's 771,751,936
    assert new[0].bytes == 771_751_936 + 67_108_864
    # 51 piecewise + 51 full graphs; live set per token: kept 4096 x 2 + (4096 + 3 x 14336) x 2 = 102,400 B:
    # 32 x (4,194,304 + 2.5 x 102,400 x 100 = 25,600,000) = 953,417,728
    assert new[1].bytes == 953_417_728
    assert new[2].bytes == int(0.4 * GIB)
    eager = profile_terms(model, PlanConfig(gpu="h100", max_num_seqs=1024, enforce_eager=True), 8192)
    assert eager[1].bytes == 0


def test_dsa_indexer_workspace_on_glm52() -> None:
    """GLM-5.2 NVFP4 at 819,200 tokens (r009, vLLM 0.26, TP 4): the indexer's profile workspace is
    40 x 819,200 x 132 B + 1 MiB = 4,325,376,000 + 1,048,576 bytes (4.03 GiB) on top of the forward
    and sampler; the log printed a 6.31 GiB peak where hkv had 2.16 GiB without it."""
    model = load_model_spec(str(Path(__file__).resolve().parents[2] / "data" / "vllm_startups" / "configs"
                                / "nvidia-glm-5.2-nvfp4.json"))
    cfg = PlanConfig(gpu="gb200", tp=4, vllm_version="0.26.0", max_model_len=819200, max_num_seqs=1024,
                     kv_cache_dtype="fp8")
    with_workspace = profile_terms(model, cfg, 8192)[0].bytes
    before = profile_terms(model, replace(cfg, vllm_version="0.24.0"), 8192)[0].bytes  # not read before 0.25
    assert with_workspace - before == 4_325_376_000 + 1_048_576
    assert abs(with_workspace / GIB - 6.31) < 0.15  # the logged peak
