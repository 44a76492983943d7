"""`hkv simulate`'s trace metrics through the CLI: first-admission hits, the roofline step time
(hand-checked on Llama 3.1 8B), the fixed model's fallback, the time series and --svg."""

import json
import re

import pytest
from hkv.cli.main import app
from typer.testing import CliRunner

runner = CliRunner()
# Llama 3.1 8B on an H100: full attention only, 16-token blocks. Three requests share a 1,024-token
# prefix and each add 256 tokens; a 1,280-token step budget admits the first alone.
LLAMA = ["simulate", "llama-3.1-8b-instruct", "--gpu", "h100", "--max-model-len", "4096",
         "--max-num-batched-tokens", "1280", "--layout", "vllm",
         "--workload", "shared-prefix:n=3,prefix=1024,prompt=256,output=4"]


def _report(args: list[str]) -> dict:
    result = runner.invoke(app, args + ["--format", "json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["reports"][0]


def test_first_admission_hits_and_the_roofline_by_hand() -> None:
    r = _report(LLAMA)
    # step 1 prefills r0 (1,280 tokens, no hit); step 2 admits r1 and r2, each hitting r0's
    # 1,024-token prefix: 2,048 of 3 x 1,280 prompt tokens
    hits = r["hits"]
    assert (hits["first_admission_hit_tokens"], hits["first_admission_prompt_tokens"]) == (2048, 3840)
    assert hits["first_admission_hit_rate"] == pytest.approx(2048 / 3840)
    assert hits["num_readmissions"] == 0 and r["prefix_hit_rate"] == pytest.approx(2048 / 3840)
    assert r["step_time_model"] == "roofline" and "h100" in r["step_time_detail"]
    # Llama 3.1 8B's matmul weights per token: 32 layers x (q, o 4096x4096; k, v 4096x1024; gate,
    # up 4096x14336; down 14336x4096) + lm_head 4096 x 128,256 = 7.505e9. Step 1's 1,280 tokens:
    # 2 x 7.505e9 x 1,280 / 989 TFLOPS = 19.43 ms, longer than reading 16 GB at 3.35 TB/s (4.8 ms):
    # r1 and r2 wait exactly that step.
    linears = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 4096 * 128256
    step_1_s = 2 * linears * 1280 / 989e12
    assert step_1_s == pytest.approx(19.43e-3, rel=1e-3)
    delay = r["timing"]["queueing_delay_s"]
    assert (delay["count"], delay["p50"], delay["max"]) == (3, pytest.approx(step_1_s), pytest.approx(step_1_s))
    assert r["compute_bound_steps"] >= 2  # step 1 and step 2 (r1 and r2: 512 new tokens)
    assert r["timing"]["finished_per_s"] == pytest.approx(3 / r["simulated_s"])


def test_no_gpu_figures_fall_back_to_the_fixed_model() -> None:
    args = ["simulate", "gemma-3-1b-it", "--gpu-memory", "24GiB", "--max-model-len", "4096",
            "--workload", "fixed:n=4,prompt=64,output=4", "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    r = json.loads(result.stdout)["reports"][0]
    assert r["step_time_model"] == "fixed" and r["step_time_detail"].startswith("fixed: 10 ms + 20 us")
    assert r["compute_bound_steps"] == 0
    assert "fixed model" in result.stderr and "--gpu-memory" in result.stderr


def test_time_series_and_evictions_in_json() -> None:
    r = _report(LLAMA)
    series = r["time_series"]
    n = len(series["t_s"])
    assert 0 < n <= 1000
    assert all(len(series[k]) == n for k in ("running", "waiting", "kv_usage", "hit_rate", "interval_hit_rate"))
    assert series["hit_rate"][-1] == pytest.approx(2048 / 3840)  # so far, at the last point: all of it
    assert series["t_s"] == sorted(series["t_s"]) and max(series["running"]) <= 3
    assert set(r["evictions"]) == {"num_evicted_blocks", "evicted_tokens", "evicted_states"}
    assert all("evicted_blocks" in g for g in r["groups"])


def test_human_table_shows_the_new_rows() -> None:
    result = runner.invoke(app, LLAMA)
    assert result.exit_code == 0, result.stderr
    for label in ("prefix hit rate (first admissions)", "hits found on re-admission", "hit rate, all admissions",
                  "evicted tokens", "queueing delay p50/p90/p99", "TTFT proxy p50/p90/p99",
                  "finished per simulated s", "step times: roofline estimate on h100"):
        assert label in result.stdout, label
    assert "53.3%" in result.stdout  # 2,048 / 3,840


def test_svg_draws_a_line_per_layout_and_panel(tmp_path) -> None:
    path = tmp_path / "series.svg"
    args = ["simulate", "gemma-3-1b-it", "--gpu", "h100", "--max-model-len", "4096", "--layout", "all",
            "--workload", "shared-prefix:n=20,prefix=512,prompt=64,output=8", "--svg", str(path), "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    layouts = [r["layout"] for r in json.loads(result.stdout)["reports"]]  # stdout keeps the JSON
    svg = path.read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    for name in layouts:
        assert f">{name}</text>" in svg
    for title in ("running requests", "waiting requests", "KV use", "prefix hit rate"):
        assert title in svg
    # 4 panels x one line per layout (the hit-rate line may break where nothing was admitted)
    assert len(re.findall("<polyline", svg)) >= 4 * len(layouts) - len(layouts)
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed


def test_svg_errors_are_one_line_and_write_nothing(tmp_path) -> None:
    missing = tmp_path / "nowhere" / "series.svg"
    result = runner.invoke(app, LLAMA + ["--svg", str(missing)])
    assert result.exit_code == 1
    assert "does not exist" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not missing.parent.exists()
    result = runner.invoke(app, ["simulate", "gemma-3-1b-it", "--gpu", "h100", "--probe-capacity",
                                 "--svg", str(tmp_path / "p.svg")])
    assert result.exit_code == 1 and "--probe-capacity" in result.stderr
    assert not (tmp_path / "p.svg").exists()
