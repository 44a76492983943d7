"""hkv's memory-profile terms against the figures real vLLM start-ups printed (profile_records.py).

For each term, every logged value must fall inside the band hkv prints, except the records named
in OUTSIDE (with the reason), and at least 90 % of the logged values of each term must be inside.
"""

from __future__ import annotations

import pytest

from profile_records import (ACTIVATION_RECORDS, ESTIMATE_RECORDS, GIB, NON_TORCH_RECORDS, ActivationRecord,
                             EstimateRecord, NonTorchRecord)

from hkv.planner.budget.budget_term import BudgetTerm
from hkv.planner.budget.model_runner import graph_estimate_applies
from hkv.planner.budget.profile import ACTIVATION_BAND_BY_PATH, CUDAGRAPH_BAND, NON_TORCH_BAND

OUTSIDE = {
    # GLM-5.2's DeepSeek sparse attention: the indexer's scores and MLA workspaces, not modelled
    ("activation", "r009_glm52_nvfp4_tp4ep_v026"): "logged 6.31 GiB, hkv 2.16 GiB",
}


def _activation_band(record: ActivationRecord) -> tuple[int, int]:
    """The union of the bands of every sampler path the record's release and install leave open."""
    rules = record.rules()
    terms = [ACTIVATION_BAND_BY_PATH[path].term("activation", record.predicted_bytes(path), "")
             for path in record.sampler_paths()]
    low, high = min(t.low_bytes for t in terms), max(t.high_bytes for t in terms)
    includes_estimate = (rules.profile_consumed_accounting and record.estimate_gib is None
                         and graph_estimate_applies(rules, v2_runner=record.v2_runner(), enforce_eager=False))
    if includes_estimate:  # the printed activation holds the graph estimate, which the log did not print
        graphs = CUDAGRAPH_BAND.term("cudagraph", record.graph_estimate().bytes, "")
        low, high = low + graphs.low_bytes, high + graphs.high_bytes
    return low, high


def _inside(band: tuple[int, int], logged: int) -> bool:
    return band[0] <= logged <= band[1]


def _estimate_band(record: EstimateRecord) -> tuple[int, int]:
    term: BudgetTerm = CUDAGRAPH_BAND.term("cudagraph", record.predicted_bytes(), "")
    return term.low_bytes, term.high_bytes


def _non_torch_band(record: NonTorchRecord) -> tuple[int, int]:
    term = NON_TORCH_BAND.term("non_torch", record.predicted_bytes(), "")
    return term.low_bytes, term.high_bytes


def _check(term: str, record_id: str, band: tuple[int, int], logged: int) -> None:
    shown = f"{record_id}: logged {logged / GIB:.2f} GiB, band {band[0] / GIB:.2f}-{band[1] / GIB:.2f} GiB"
    assert _inside(band, logged) is ((term, record_id) not in OUTSIDE), shown


@pytest.mark.parametrize("record", ACTIVATION_RECORDS, ids=lambda r: r.record_id)
def test_activation_band_holds_the_log(record: ActivationRecord) -> None:
    _check("activation", record.record_id, _activation_band(record), record.comparable_logged_bytes())


@pytest.mark.parametrize("record", ESTIMATE_RECORDS, ids=lambda r: r.record_id)
def test_cudagraph_band_holds_the_log(record: EstimateRecord) -> None:
    _check("cudagraph", record.record_id, _estimate_band(record), int(record.logged_gib * GIB))


@pytest.mark.parametrize("record", NON_TORCH_RECORDS, ids=lambda r: r.record_id)
def test_non_torch_band_holds_the_log(record: NonTorchRecord) -> None:
    _check("non_torch", record.record_id, _non_torch_band(record), int(record.logged_gib * GIB))


def test_ninety_percent_inside_each_band() -> None:
    shares = {
        "activation": [_inside(_activation_band(r), r.comparable_logged_bytes()) for r in ACTIVATION_RECORDS],
        "cudagraph": [_inside(_estimate_band(r), int(r.logged_gib * GIB)) for r in ESTIMATE_RECORDS],
        "non_torch": [_inside(_non_torch_band(r), int(r.logged_gib * GIB)) for r in NON_TORCH_RECORDS],
    }
    for term, inside in shares.items():
        assert sum(inside) >= 0.9 * len(inside), term


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
