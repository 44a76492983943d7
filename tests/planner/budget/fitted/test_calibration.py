"""Calibration from a user's own start-up log, on hand-made observations and on the llm-d H100 logs.

The llm-d benchmark logs (shared/data/vllm_memory_logs r022, r024: vLLM 0.11.0, one H100) are the
oracle: calibrated on Llama-3.1-8B's start-up, hkv must predict Qwen3-32B's logged 4.45 GiB of KV
memory; a log whose available memory is doctored by 2 GiB must be caught (its calibration moves
the prediction 2 GiB off).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.budget_constants import SHIPPED, GraphBytes
from hkv.planner.budget.cudagraph_estimate import CudagraphEstimate
from hkv.planner.budget.fitted.calibration import Calibration, calibrate
from hkv.planner.budget.fitted.observation import BudgetObservation
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.budget.non_torch import NonTorchSetup
from hkv.planner.engines.vllm.log import read_vllm_log
from hkv.planner.engines.vllm.log_calibration import calibrate_from_log
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan_config import PlanConfig

MIB = 2**20
GIB = 2**30
CONFIGS = Path(__file__).resolve().parents[3] / "data" / "vllm_startups" / "configs"
CONSTANTS = replace(SHIPPED, context_bytes=100 * MIB, graph=GraphBytes(MIB, 2.0), calibrated_residual_low_bytes=10 * MIB,
                    calibrated_residual_high_bytes=20 * MIB)


def observation(overhead: int | None, logged_graph: int | None = None) -> BudgetObservation:
    setup = NonTorchSetup(1, consumed_accounting=False, nvlink=True, linear_attention=False)
    graph = CudagraphEstimate(10, 3, 2, moe=False, live_bytes_per_token=1000)  # 10 x (1 MiB + 2 x 1000 x 3) bytes
    return BudgetObservation("log", "me", "h100@0.20.0", setup, graph, True, logged_graph, overhead)


def test_residual_and_graph_scale() -> None:
    predicted_graph = 10 * (MIB + 6000)  # 10,545,760
    cal = calibrate(observation(GIB, logged_graph=2 * predicted_graph), log="a.log", model="m", gpu="h100",
                    vllm_version="0.20.0", constants=CONSTANTS)
    assert cal.graph_scale == 2.0
    # overhead 1 GiB less the scaled graphs (2 x 10,545,760) and the 100 MiB context
    assert cal.residual_bytes == GIB - 2 * predicted_graph - 100 * MIB


def test_without_a_logged_estimate_the_graphs_keep_their_scale() -> None:
    cal = calibrate(observation(GIB), log="a.log", model="m", gpu="h100", vllm_version="0.20.0", constants=CONSTANTS)
    assert (cal.graph_scale, cal.residual_bytes) == (1.0, GIB - 10 * (MIB + 6000) - 100 * MIB)


def test_a_log_without_its_budget_cannot_calibrate() -> None:
    with pytest.raises(InvalidInputError, match="Available KV cache memory"):
        calibrate(observation(None), log="a.log", model="m", gpu="h100", vllm_version="0.20.0")


def test_apply_adds_the_residual_and_narrows_the_band() -> None:
    model = load_model_spec(str(CONFIGS / "qwen3-32b.json"))
    cfg = PlanConfig(gpu="h100", vllm_version="0.11.0", budget_constants=CONSTANTS)
    cal = Calibration("a.log", "m", "h100", "0.11.0", residual_bytes=50 * MIB, graph_scale=1.0)
    plain = compute_memory_budget(model, cfg)
    calibrated = compute_memory_budget(model, replace(cfg, budget_constants=cal.apply(CONSTANTS)))
    assert calibrated.non_torch_bytes == plain.non_torch_bytes
    assert calibrated.available_bytes == plain.available_bytes - 50 * MIB
    term = calibrated.term("calibration")
    assert (term.bytes, term.low_bytes, term.high_bytes) == (50 * MIB, 40 * MIB, 70 * MIB)
    assert "calibrated on a.log" in term.note
    low, high = calibrated.available_band  # the calibrated band alone (weights from the config keep theirs)
    weights = calibrated.term("weights")
    assert high - low == (weights.high_bytes - weights.low_bytes) + 30 * MIB + (
        calibrated.term("activation").high_bytes - calibrated.term("activation").low_bytes)


def test_json_round_trip_and_bad_files() -> None:
    cal = Calibration("a.log", "m", None, "0.11.0", residual_bytes=-5, graph_scale=0.75)
    assert Calibration.from_json(cal.to_json()) == cal
    with pytest.raises(InvalidInputError, match="not JSON"):
        Calibration.from_json("{oops")
    with pytest.raises(InvalidInputError, match="not an hkv calibration"):
        Calibration.from_json('{"log": "a"}')
    with pytest.raises(InvalidInputError, match="lacks a valid"):
        Calibration.from_json('{"format": "hkv-calibration/1", "log": "a"}')


def test_mismatch_names_what_differs() -> None:
    cal = Calibration("a.log", "m", "h100", "0.11.0", 0, 1.0)
    assert cal.mismatch("h100", "0.11.0") is None
    assert cal.mismatch("l40s", "0.33.0") == "GPU l40s (calibrated on h100); vLLM 0.33.0 (calibrated on 0.11.0)"


def llmd_log(model: str, available_gib: float, weights_gib: float) -> list[str]:
    """An llm-d H100 start-up (vLLM 0.11.0) as its log lines read, figures from the record."""
    return [
        "INFO 10-01 12:00:00 [api_server.py:1896] vLLM API server version 0.11.0",
        f"INFO 10-01 12:00:00 [utils.py:328] non-default args: {{'model': '{model}', 'max_model_len': 16000, "
        "'block_size': 128, 'enable_prefix_caching': True}",
        f"INFO 10-01 12:00:30 [gpu_model_runner.py:2392] Model loading took {weights_gib} GiB and 31.46 seconds",
        f"INFO 10-01 12:00:40 [gpu_worker.py:298] Available KV cache memory: {available_gib} GiB",
    ]


def qwen3_32b_available(calibration: Calibration) -> float:
    model = load_model_spec(str(CONFIGS / "qwen3-32b.json"))
    cfg = PlanConfig(gpu="h100", vllm_version="0.11.0", max_model_len=16000, block_size=128,
                     enable_prefix_caching=True, budget_constants=calibration.apply())
    return compute_memory_budget(model, cfg).available_bytes / GIB


def test_llmd_calibrated_on_llama_predicts_qwen3_32b() -> None:
    llama = load_model_spec(str(CONFIGS / "llama-3.1-8b-instruct.json"))
    log = read_vllm_log(llmd_log("meta-llama/Llama-3.1-8B-Instruct", 51.38, 14.99))  # r022
    cal = calibrate_from_log(log, llama, {"gpu": "h100"}, "r022.log")
    assert (cal.gpu, cal.vllm_version) == ("h100", "0.11.0")
    assert qwen3_32b_available(cal) == pytest.approx(4.45, abs=0.05)  # r024 logged 4.45 GiB


def test_a_doctored_log_is_caught() -> None:
    llama = load_model_spec(str(CONFIGS / "llama-3.1-8b-instruct.json"))
    log = read_vllm_log(llmd_log("meta-llama/Llama-3.1-8B-Instruct", 51.38 + 2, 14.99))
    cal = calibrate_from_log(log, llama, {"gpu": "h100"}, "wrong.log")
    assert abs(qwen3_32b_available(cal) - 4.45) > 1.9  # the 2 GiB shows in the prediction


def test_a_log_hkv_cannot_place_is_refused() -> None:
    llama = load_model_spec(str(CONFIGS / "llama-3.1-8b-instruct.json"))
    log = read_vllm_log(llmd_log("meta-llama/Llama-3.1-8B-Instruct", 51.38, 14.99)[1:])  # no version line
    with pytest.raises(InvalidInputError, match="no vLLM version"):
        calibrate_from_log(log, llama, {"gpu": "h100"}, "r022.log")
