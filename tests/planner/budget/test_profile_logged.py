"""hkv's memory-profile terms against the figures real vLLM start-ups printed (profile_records.py).

The activation's sampler paths are mechanisms read from vLLM's code, checked record by record.
The graph estimate's per-layer bytes and the non-torch parts are fitted (hkv.planner.budget.fitted;
their out-of-sample error is benchmarks/bench_blind_budget.py's): here the shipped values must
stay within a factor of two of nine in ten logged estimates, and the residual band the non-torch
term carries must hold most logged non-torch figures, including logs the benchmark cannot plan.
"""

from __future__ import annotations

from profile_records import ACTIVATION_RECORDS, ESTIMATE_RECORDS, GIB, NON_TORCH_RECORDS

from hkv.planner.budget.budget_constants import SHIPPED


# Logged estimates the shipped graph constants miss by more than a factor of two (ratio logged / hkv).
# The constants are fitted on the usable start-ups only (the benchmark's records); these logs are
# not among them, so this is an out-of-sample check of the estimate's form.
GRAPH_OUTSIDE = {
    # MoE at TP 1 on 0.19.2 (printed, not subtracted; a refused start-up under WSL): the fused-MoE
    # kernels' per-graph memory is 2.7x what the forward's live set gives; the TP 4 MoE logs (r009,
    # q002's budget) and TP 8 (r049's) agree with the live set, so TP 1 MoE is where the form is weakest
    "r007_qwen36_35b_nvfp4_wsl_v0192_negative": "2.68",
    # 16 piecewise graphs, MTP at TP 2 on 0.27.1: the drafter's graphs are not in the layer count
    "r050_gpustack251_qwen36_27b_awq_mtp_tp2_v0271": "0.47",
}


def test_graph_estimate_within_a_factor_of_two() -> None:
    ratios = {r.record_id: r.logged_gib * GIB / r.predicted_bytes() for r in ESTIMATE_RECORDS}
    outside = {name: f"{ratio:.2f}" for name, ratio in ratios.items() if not 0.5 <= ratio <= 2.0}
    assert set(outside) == set(GRAPH_OUTSIDE), outside


def test_non_torch_residual_band_holds_most_logs() -> None:
    """Logged non-torch inside [point - residual_low, point + residual_high] for 3 in 4 logs (the band
    covers what the whole overhead misses, so non-torch alone sits inside it more often than not)."""
    outside = {}
    for record in NON_TORCH_RECORDS:
        point, logged = record.predicted_bytes(), int(record.logged_gib * GIB)
        if not point - SHIPPED.residual_low_bytes <= logged <= point + SHIPPED.residual_high_bytes:
            outside[record.record_id] = (round(point / GIB, 2), record.logged_gib)
    assert len(outside) <= 0.25 * len(NON_TORCH_RECORDS), outside


# gpt-oss-120b's figure is derived (requested - weights - non-torch - available; the printed
# 7.38 GiB was copied from the 20b row) and sits between the two paths: unexplained.
SORTING_EXCEPTIONS = {"r019_llmd_gptoss120b_h100": "3.42 GiB; 14 B: 2.73, 38 B: 7.33"}


def test_sorting_sampler_explains_the_pip_install_peaks() -> None:
    """Up to 0.16 without FlashInfer's sampler the peak is the sort of max_num_seqs x vocab: within
    3.5 % of every logged peak whatever the model size (0.6B to 70B), except SORTING_EXCEPTIONS."""
    checked = 0
    for record in ACTIVATION_RECORDS:
        if record.sampler_paths()[0] == "sort" and record.record_id not in SORTING_EXCEPTIONS:
            logged = record.comparable_logged_bytes()
            assert abs(record.predicted_bytes() - logged) <= 0.035 * logged, record.record_id
            checked += 1
    assert checked >= 10


def test_flashinfer_sampler_explains_the_image_peak() -> None:
    """Mistral-Small-3.2 on the vllm-openai 0.11.0 image printed 2.12 GiB: FlashInfer's 14 B per
    logit make 1,024 x 131,072 x 14 B = 1.75 GiB of sampler (with the kept hidden states and the
    dummy images' cached outputs, 1.91 GiB); the sort would make 4.91 GiB."""
    (record,) = [r for r in ACTIVATION_RECORDS if r.record_id == "r026_llmd_mistral_small32_h100"]
    assert record.sampler_paths() == ("flashinfer",)
    logged = record.comparable_logged_bytes()
    assert abs(record.predicted_bytes() - logged) <= 0.12 * logged
    assert record.predicted_bytes("sort") > 2 * logged  # the sort cannot explain it
