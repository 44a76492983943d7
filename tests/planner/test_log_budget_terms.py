"""The memory lines of real vLLM start-ups (shared/data/vllm_memory_logs/records.jsonl, each line
copied verbatim with its record id), the log's own arithmetic, the anomalies, and the term-by-term
comparison with hkv's blind budget.

Every expected figure is the number printed in the line, typed by hand; every arithmetic result
is worked out in the comment beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.logged_figure import GIB, LoggedFigure
from hkv.planner.engines.vllm.log import read_vllm_log
from hkv.planner.engines.vllm.log_accounting import CONSUMED, NOT_SUBTRACTED, SUBTRACTED, check_accounting
from hkv.planner.engines.vllm.log_anomalies import detect_anomalies
from hkv.planner.engines.vllm.log_budget_terms import blind_config_fields, compare_budget
from hkv.planner.engines.vllm.memory_lines import read_logged_memory
from hkv.planner.engines.vllm.rules import VllmRules

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "vllm_startups" / "configs"

# (record id, the line as the record holds it, {LoggedMemory field: the value printed in the line})
LINES = [
    ("r010", "(Worker_TP0 pid=1806413) INFO 10-23 15:14:18 [gpu_model_runner.py:2392] Model loading took 74.2812 GiB "
             "and 215.831224 seconds",
     {"weights": "74.2812", "v2_model_runner": False}),
    ("r010", "(Worker_TP0 pid=1806413) INFO 10-23 15:14:30 [gpu_worker.py:298] Available KV cache memory: 44.59 GiB",
     {"available": "44.59"}),
    ("r010", "(Worker_TP1 pid=1806414) INFO 10-23 15:14:56 [gpu_model_runner.py:3118] Graph capturing finished in 25 "
             "secs, took 2.37 GiB",
     {"graph_actual": "2.37"}),
    ("r010", "(Worker_TP1 pid=1806414) INFO 10-23 15:14:56 [gpu_worker.py:391] Free memory on device (139.21/139.81 "
             "GiB) on startup. Desired GPU memory utilization is (0.9, 125.83 GiB). Actual usage is 74.28 GiB for "
             "weight, 5.58 GiB for peak activation, 1.38 GiB for non-torch memory, and 2.37 GiB for CUDAGraph memory. "
             "Replace gpu_memory_utilization config with `--kv-cache-memory=45175492096` to fit into requested "
             "memory, or `--kv-cache-memory=59540753920` to fully utilize gpu memory. Current kv cache memory in use "
             "is 47878721024 bytes.",
     {"free_at_start": "139.21", "total": "139.81", "utilization": "0.9", "requested": "125.83", "weights": "74.28",
      "peak_activation": "5.58", "non_torch": "1.38", "graph_actual": "2.37", "kv_fit_requested": "45175492096",
      "usage_format": "split"}),
    ("r009", "(Worker_TP0_EP0 pid=4155524) INFO 08-20 17:28:08 [gpu_worker.py:857] Free memory on device "
             "(181.84/184.31 GiB) on startup. Desired GPU memory utilization is (0.92, 169.56 GiB). Actual usage is "
             "106.69 GiB for weight, 6.31 GiB for peak activation, 0.95 GiB for non-torch memory, and 4.13 GiB for "
             "CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=55124106138` (51.34 "
             "GiB) to fit into requested memory, or `--kv-cache-memory=68302635520` (63.61 GiB) to fully utilize gpu "
             "memory. Current kv cache memory in use is 50.62 GiB.",
     {"free_at_start": "181.84", "total": "184.31", "utilization": "0.92", "requested": "169.56", "weights": "106.69",
      "peak_activation": "6.31", "non_torch": "0.95", "graph_actual": "4.13", "kv_fit_requested": "55124106138",
      "usage_format": "split"}),
    ("r009", "(Worker_TP0_EP0 pid=4155524) INFO 08-20 17:22:36 [gpu_model_runner.py:6737] Estimated CUDA graph "
             "memory: 4.99 GiB total",
     {"graph_estimate": "4.99"}),
    ("r009", "(Worker_TP0_EP0 pid=4155524) INFO 08-20 17:22:37 [gpu_worker.py:575] CUDA graph memory profiling is "
             "enabled (default since v0.21.0). The current --gpu-memory-utilization=0.9200 is equivalent to "
             "--gpu-memory-utilization=0.8929 without CUDA graph memory profiling. To maintain the same effective KV "
             "cache size as before, increase --gpu-memory-utilization to 0.9471. To disable, set "
             "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.",
     {"utilization": "0.9200", "graph_estimate_disabled": False}),
    ("r001", "(EngineCore pid=1462) INFO 04-07 02:46:27 [gpu_worker.py:597] CUDA graph pool memory: 0.65 GiB "
             "(actual), 0.78 GiB (estimated), difference: 0.13 GiB (20.1%).",
     {"graph_actual": "0.65", "graph_estimate": "0.78"}),
    ("r001", "(EngineCore pid=1462) INFO 04-07 02:46:21 [gpu_worker.py:470] In v0.19, CUDA graph memory profiling "
             "will be enabled by default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1), which more accurately accounts "
             "for CUDA graph memory during KV cache allocation. To try it now, set "
             "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 and increase --gpu-memory-utilization from 0.9000 to 0.9176 "
             "to maintain the same effective KV cache size.",
     {"utilization": "0.9000"}),
    ("r008", "(EngineCore pid=326) INFO 10-06 17:00:11 [model_runner.py:407] Model loading took 15.0 GiB memory and "
             "5.420225 seconds",
     {"weights": "15.0", "v2_model_runner": True}),
    ("r008", "(EngineCore pid=326) INFO 10-06 17:00:41 [gpu_worker.py:955] Free memory on device (78.84/79.25 GiB) on "
             "startup. Desired GPU memory utilization is (0.92, 72.91 GiB). Actual usage is 15.26 GiB for consumed "
             "memory (weights + non-torch), 1.44 GiB for peak activation, and 0.23 GiB for CUDAGraph memory.",
     {"free_at_start": "78.84", "total": "79.25", "utilization": "0.92", "requested": "72.91", "consumed": "15.26",
      "peak_activation": "1.44", "graph_actual": "0.23", "usage_format": "consumed", "weights": None}),
    ("r031", "(EngineCore_DP0 pid=2552931) DEBUG 09-28 21:12:43 [v1/worker/gpu_worker.py:284] Initial free memory: "
             "23.08 GiB; Requested memory: 0.80 (util), 18.82 GiB",
     {"free_at_start": "23.08", "utilization": "0.80", "requested": "18.82"}),
    ("r031", "(EngineCore_DP0 pid=2552931) DEBUG 09-28 21:12:43 [v1/worker/gpu_worker.py:297] Memory profiling takes "
             "14.40 seconds. Total non KV cache memory: 10.22GiB; torch peak memory increase: 1.40GiB; non-torch "
             "forward increase memory: 0.02GiB; weights memory: 8.80GiB.",
     {"non_kv_total": "10.22", "torch_peak": "1.40", "non_torch": "0.02", "weights": "8.80"}),
    ("r051", "INFO 05-30 06:40:49 model_runner.py:1115] Loading model weights took 2.8884 GB",
     {"weights": "2.8884", "v2_model_runner": None}),
    ("r051", "INFO 05-30 06:40:55 worker.py:267] the current vLLM instance can use total_gpu_memory (14.56GiB) x "
             "gpu_memory_utilization (0.50) = 7.28GiB",
     {"total": "14.56", "utilization": "0.50", "requested": "7.28", "usage_format": "v0"}),
    ("r051", "INFO 05-30 06:40:55 worker.py:267] model weights take 2.89GiB; non_torch_memory takes 0.01GiB; PyTorch "
             "activation peak memory takes 2.02GiB; the rest of the memory reserved for KV Cache is 2.36GiB.",
     {"weights": "2.89", "non_torch": "0.01", "torch_peak": "2.02", "available": "2.36"}),
    ("r043", "model_runner.py:422   Model loading took 38.24 GiB memory and 226.512052 seconds",
     {"weights": "38.24", "v2_model_runner": True}),
    ("r041", "▎ Available KV cache memory: 22.5 GiB", {"available": "22.5"}),
    ("r007", "(EngineCore pid=207) INFO 04-19 10:21:55 [gpu_worker.py:436] Available KV cache memory: -0.12 GiB",
     {"available": "-0.12"}),
    # An author's markdown summary of the lines.
    ("r018", "- **Model loading took:** 13.47 GiB memory and 31.68 seconds", {"weights": "13.47"}),
    ("r021", "- **Available KV cache memory:** -1.44 GiB (NEGATIVE - INSUFFICIENT)", {"available": "-1.44"}),
]


def _as_printed(value: object) -> object:
    return value.text if isinstance(value, LoggedFigure) else value


@pytest.mark.parametrize("record, line, expected", LINES, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(LINES)])
def test_each_figure_is_the_printed_number(record, line, expected):
    memory = read_logged_memory(line)
    assert {name: _as_printed(getattr(memory, name)) for name in expected} == expected


def test_rewrapped_lines_read_the_same():
    """An author's re-wrapping (newlines and indentation between words, quote marks) changes nothing."""
    line = LINES[4][1]
    words = line.split(" ")
    wrapped = "\n▎   ".join(" ".join(words[i:i + 7]) for i in range(0, len(words), 7))
    assert "\n" in wrapped and read_logged_memory(wrapped) == read_logged_memory(line)


def test_the_most_precise_printing_of_a_figure_wins():
    """r010 prints its weights as 74.2812 (loading line) and 74.28 (usage line)."""
    memory = read_logged_memory(LINES[0][1] + "\n" + LINES[3][1])
    assert memory.weights == LoggedFigure("74.2812")
    assert LoggedFigure("74.28").half_unit_bytes == GIB // 200
    assert LoggedFigure("74.2812").half_unit_bytes == GIB // 20000


# The log's own arithmetic, worked out by hand:
#   r010 (0.10.2): 125.83 - 74.28 - 5.58 - 1.38 = 44.59 = available; no estimate printed
#   r009 (0.26.0): 169.56 - 106.69 - 6.31 - 0.95 = 55.61, - 4.99 estimate = 50.62 = available
#   r008 (0.31.0): 72.91 - 15.26 - 1.44 = 56.21 = available
ACCOUNTING = [
    ("r010", "0.10.2", (LINES[1][1], LINES[3][1]), NOT_SUBTRACTED, (NOT_SUBTRACTED,)),
    ("r009", "0.26.0", (LINES[4][1], LINES[5][1],
                        "(Worker_TP0_EP0 pid=4155524) INFO 08-20 17:22:37 [gpu_worker.py:560] Available KV cache "
                        "memory: 50.62 GiB"), SUBTRACTED, (SUBTRACTED,)),
    ("r008", "0.31.0", (LINES[9][1], LINES[10][1],
                        "(EngineCore pid=326) INFO 10-06 17:00:33 [gpu_worker.py:692] Available KV cache memory: "
                        "56.21 GiB"),
     CONSUMED, (CONSUMED,)),
]


@pytest.mark.parametrize("record, version, lines, expected, matching", ACCOUNTING, ids=[a[0] for a in ACCOUNTING])
def test_the_logged_arithmetic_adds_up_under_the_releases_rule(record, version, lines, expected, matching):
    memory = read_logged_memory("\n".join(lines))
    check = check_accounting(memory, VllmRules.for_version(version), memory.v2_model_runner)
    assert check is not None and check.expected_rule == expected and check.matching_rules == matching
    assert check.adds_up and check.follows_release


def test_arithmetic_that_does_not_add_up_is_named():
    """r010's figures with available changed to 40.00: 44.59 - 40.00 = 4.59 GiB unaccounted."""
    lines = [LINES[3][1], "INFO 10-23 15:14:30 [gpu_worker.py:298] Available KV cache memory: 40.00 GiB"]
    log = read_vllm_log(lines)
    comparison = compare_budget(log, load_model_spec(str(CONFIGS / "qwen3-next-80b-a3b-instruct.json")), {}, "0.10.2")
    anomalies = {a.name: a.text for a in detect_anomalies(log, comparison)}
    assert "do not add up" in anomalies["accounting"] and "+4.59 GiB" in anomalies["accounting"]


def test_an_estimate_added_up_without_subtraction_is_another_rule():
    """0.26 figures that add up without the estimate (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0):
    169.56 - 106.69 - 6.31 - 0.95 = 55.61 logged as available."""
    lines = [LINES[4][1], LINES[5][1], "INFO [gpu_worker.py:560] Available KV cache memory: 55.61 GiB"]
    memory = read_logged_memory("\n".join(lines))
    check = check_accounting(memory, VllmRules.for_version("0.26.0"), False)
    assert check is not None and check.matching_rules == (NOT_SUBTRACTED,) and not check.follows_release


LORA_ARGS = ("(APIServer pid=1) INFO 11-23 10:00:00 [api_utils.py:286] non-default args: {'model': "
             "'meta-llama/Llama-3.1-8B-Instruct', 'enable_lora': True, 'max_loras': 4, 'max_lora_rank': 64}")
CONNECTOR_LINE = ("(Worker pid=9) INFO 11-23 10:00:05 [factory.py:62] Creating v1 connector with name: NixlConnector "
                  "and engine_id: 5b1c")
TRANSFER_ARGS = ("INFO 11-23 10:00:00 [utils.py:233] non-default args: {'model': 'Qwen/Qwen3-8B', "
                 "'kv_transfer_config': {'kv_connector': 'LMCacheConnectorV1', 'kv_role': 'kv_both'}}")
BUSY_GPU = ("(EngineCore pid=3) INFO 11-23 10:01:00 [gpu_worker.py:955] Free memory on device (60.0/79.18 GiB) on "
            "startup. Desired GPU memory utilization is (0.9, 71.26 GiB). Actual usage is 15.26 GiB for consumed "
            "memory (weights + non-torch), 1.44 GiB for peak activation, and 0.23 GiB for CUDAGraph memory.")
REFUSED = ("ValueError: Free memory on device cuda:0 (10.5/79.18 GiB) on startup is less than desired GPU memory "
           "utilization (0.9, 71.26 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
           "processes.")
R011_FREE = ("(EngineCore pid=12764) INFO 08-22 20:20:16 [gpu_worker.py:789] Free memory on device (22.45/23.99 GiB) "
             "on startup. Desired GPU memory utilization is (0.85, 20.39 GiB). Actual usage is 1.49 GiB for consumed "
             "memory (weights + non-torch), 0.25 GiB for peak activation, and 0.37 GiB for CUDAGraph memory.")
R016_FREE = ("81:(EngineCore pid=492078) INFO 08-23 09:40:11 [gpu_worker.py:789] Free memory on device (112.26/119.63 "
             "GiB) on startup. Desired GPU memory utilization is (0.92, 110.06 GiB). Actual usage is 55.99 GiB for "
             "consumed memory (weights + non-torch), 3.78 GiB for peak activation, and 0.94 GiB for CUDAGraph memory.")

# (case, log lines, anomaly names, a phrase each named anomaly's text must hold)
ANOMALIES = [
    ("LoRA args", [LORA_ARGS], {"lora": "max_loras 4, max_lora_rank 64"}),
    ("connector line", [CONNECTOR_LINE], {"kv_connector": "KV connector NixlConnector"}),
    ("transfer config", [TRANSFER_ARGS], {"kv_connector": "KV connector LMCacheConnectorV1"}),
    ("offloading flag", ["INFO non-default args: {'model': 'Qwen/Qwen3-8B', 'kv_offloading_size': 20.0}"],
     {"kv_connector": "KV offloading to CPU (20.0 GiB)"}),
    # 79.18 - 60.0 = 19.18 GiB in use; requested 71.26 - free 60.0 = 11.26 GiB more than was free.
    ("busy GPU", [BUSY_GPU], {"memory_in_use_at_start": "11.26 GiB MORE than was free"}),
    ("refused", [REFUSED], {"free_below_requested": "(10.5 GiB)", "memory_in_use_at_start": "68.68 GiB"}),
    # r011 (real): 23.99 - 22.45 = 1.54 GiB in use; 22.45 - 20.39 = 2.06 GiB of headroom.
    ("r011 desktop GPU", [R011_FREE], {"memory_in_use_at_start": "2.06 GiB below what was free"}),
    # r010 (real): 139.81 - 139.21 = 0.60 GiB in use, under the 1 GiB threshold: nothing to say.
    ("r010 idle GPU", [LINES[3][1]], {}),
    ("r007 negative budget", [LINES[18][1]], {"negative_budget": "-0.12 GiB"}),
]


@pytest.mark.parametrize("case, lines, expected", ANOMALIES, ids=[a[0] for a in ANOMALIES])
def test_anomalies_are_named(case, lines, expected):
    anomalies = {a.name: a.text for a in detect_anomalies(read_vllm_log(lines), None)}
    assert set(anomalies) == set(expected)
    assert all(phrase in anomalies[name] for name, phrase in expected.items())


def test_unified_memory_from_the_printed_total():
    """r016 prints 119.63 GiB, the GB10's total in hkv's GPU table: the re-plan runs on gb10 and
    the host's 119.63 - 112.26 = 7.37 GiB in use is named as the host's."""
    log = read_vllm_log([R016_FREE])
    model = load_model_spec("llama-3.1-8b-instruct")
    assert blind_config_fields(log, model, {}, "0.27.1")["gpu"] == "gb10"
    anomalies = {a.name: a.text for a in detect_anomalies(log, compare_budget(log, model, {}, "0.27.1"))}
    assert "unified memory (gb10)" in anomalies["unified_memory"]
    assert "7.37 GiB" in anomalies["memory_in_use_at_start"] and "the host" in anomalies["memory_in_use_at_start"]


R010_ARGS = ("(APIServer pid=1804347) INFO 10-23 15:10:10 [utils.py:328] non-default args: {'host': '0.0.0.0', "
             "'model': '/data/models/Qwen3-Next-80B-A3B-Instruct', 'tensor_parallel_size': 2}")
R010_LOG = [R010_ARGS, LINES[0][1], LINES[1][1], LINES[2][1], LINES[3][1]]


def test_r010_term_by_term():
    """Qwen3-Next-80B at TP 2 on H200, vLLM 0.10.2: the blind budget runs on the h200 (139.81 GiB
    printed), at the logged 0.9; requested = 0.9 x 139.81 = 125.83 GiB; the estimate is not
    printed and not subtracted in 0.10.2."""
    log = read_vllm_log(R010_LOG)
    comparison = compare_budget(log, load_model_spec(str(CONFIGS / "qwen3-next-80b-a3b-instruct.json")), {}, "0.10.2")
    assert comparison.error is None
    assert comparison.config["gpu"] == "h200" and comparison.config["gpu_memory_utilization"] == 0.9
    assert "available_kv_memory_bytes" not in comparison.config and comparison.config["tp"] == 2
    rows = {row.name: row for row in comparison.rows}
    logged = {name: row.logged.text for name, row in rows.items() if row.logged is not None}
    assert logged == {"GPU total": "139.81 GiB", "requested (total x utilization)": "125.83 GiB",
                      "weights": "74.2812 GiB", "activation peak": "5.58 GiB", "non-torch": "1.38 GiB",
                      "CUDA graph pool (captured)": "2.37 GiB", "available KV cache memory": "44.59 GiB"}
    assert rows["GPU total"].inside_band and rows["requested (total x utilization)"].inside_band
    assert rows["CUDA graph estimate"].hkv_bytes == 0 and rows["CUDA graph estimate"].inside_band is None
    assert rows["weights"].source in ("config", "header") and rows["activation peak"].source == "estimate"
    assert rows["available KV cache memory"].hkv_bytes == comparison.budget.available_bytes


def test_a_wrong_hkv_term_shows_as_outside_its_band():
    """weights_bytes forced to 60 GiB: exact ("given"), 60 - 74.2812 = -14.2812 GiB from the log."""
    log = read_vllm_log(R010_LOG)
    model = load_model_spec(str(CONFIGS / "qwen3-next-80b-a3b-instruct.json"))
    comparison = compare_budget(log, model, {"weights_bytes": 60 * GIB}, "0.10.2")
    weights = next(row for row in comparison.rows if row.name == "weights")
    assert weights.source == "given" and weights.hkv_low_bytes == weights.hkv_high_bytes == 60 * GIB
    assert weights.inside_band is False and weights in comparison.mismatches
    assert weights.difference_bytes == 60 * GIB - int(74.2812 * GIB)



def test_a_budget_that_does_not_fit_stays_negative():
    """r021 (Llama-3.3-70B FP8 on one H100, vLLM 0.11): vLLM printed -1.44 GiB; hkv's row keeps the
    sign of requested - terms instead of the plan's 0."""
    log = read_vllm_log(["- **Model loading took:** 67.72 GiB memory and 45.09 seconds",
                         "- **Available KV cache memory:** -1.44 GiB (NEGATIVE - INSUFFICIENT)"])
    model = load_model_spec(str(CONFIGS / "llama-3.3-70b-instruct-fp8-dynamic.json"))
    comparison = compare_budget(log, model, {"gpu": "h100", "max_model_len": 16000}, "0.11.0")
    available = next(row for row in comparison.rows if row.name == "available KV cache memory")
    assert comparison.budget is not None and not comparison.budget.fits
    assert available.hkv_bytes == -comparison.budget.shortfall_bytes and "does not fit" in available.note
