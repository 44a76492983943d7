"""`hkv calibrate LOG` and `hkv plan --calibration FILE / --calibrate LOG`.

The log is the llm-d H100 start-up of Llama-3.1-8B (vLLM 0.11.0; shared record r022: weights
14.99 GiB, 51.38 GiB available), written here as vLLM prints it; Qwen3-32B's start-up on the same
machine (r024) logged 4.45 GiB available, which the calibrated plan must give within 0.05 GiB.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.cli.main import app
from typer.testing import CliRunner

runner = CliRunner()
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "vllm_startups" / "configs"
GIB = 2**30


def write_log(tmp_path: Path, available_gib: float = 51.38) -> Path:
    llama = CONFIGS / "llama-3.1-8b-instruct.json"
    path = tmp_path / "r022.log"
    path.write_text("\n".join([
        "INFO 10-01 12:00:00 [api_server.py:1896] vLLM API server version 0.11.0",
        f"INFO 10-01 12:00:00 [utils.py:328] non-default args: {{'model': '{llama}', 'max_model_len': 16000, "
        "'block_size': 128, 'enable_prefix_caching': True}",
        "INFO 10-01 12:00:30 [gpu_model_runner.py:2392] Model loading took 14.99 GiB and 31.46 seconds",
        f"INFO 10-01 12:00:40 [gpu_worker.py:298] Available KV cache memory: {available_gib} GiB",
    ]) + "\n")
    return path


QWEN = ["plan", str(CONFIGS / "qwen3-32b.json"), "--gpu", "h100", "--vllm-version", "0.11.0", "--max-model-len", "16000",
        "--block-size", "128", "--layout", "vllm", "--format", "json"]


def available_gib(result_stdout: str) -> float:
    return json.loads(result_stdout)["budget"]["available_bytes"] / GIB


def test_calibrate_writes_a_file_plan_reads(tmp_path: Path) -> None:
    out = tmp_path / "h100.cal"
    result = runner.invoke(app, ["calibrate", str(write_log(tmp_path)), "--gpu", "h100", "--out", str(out)])
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert (saved["format"], saved["gpu"], saved["vllm_version"]) == ("hkv-calibration/1", "h100", "0.11.0")
    plan = runner.invoke(app, [*QWEN, "--calibration", str(out)])
    assert plan.exit_code == 0, plan.output
    assert available_gib(plan.stdout) == pytest.approx(4.45, abs=0.05)
    assert json.loads(plan.stdout)["config"]["calibration"].startswith("calibrated on r022.log")


def test_calibrate_in_one_step_matches_the_file(tmp_path: Path) -> None:
    log = write_log(tmp_path)
    direct = runner.invoke(app, [*QWEN, "--calibrate", str(log)])
    assert direct.exit_code == 0, direct.output
    assert available_gib(direct.stdout) == pytest.approx(4.45, abs=0.05)


def test_a_wrong_log_moves_the_plan(tmp_path: Path) -> None:
    """A log doctored by 2 GiB moves the prediction by 2 GiB: the check above can fail."""
    plan = runner.invoke(app, [*QWEN, "--calibrate", str(write_log(tmp_path, 53.38))])
    assert abs(available_gib(plan.stdout) - 4.45) > 1.9


def test_calibration_on_another_gpu_says_so(tmp_path: Path) -> None:
    out = tmp_path / "h100.cal"
    runner.invoke(app, ["calibrate", str(write_log(tmp_path)), "--gpu", "h100", "--out", str(out)])
    plan = runner.invoke(app, ["plan", str(CONFIGS / "qwen3-8b-fp8.json"), "--gpu", "h200", "--calibration", str(out),
                               "--format", "json"])
    assert plan.exit_code == 0, plan.output
    assert "this plan differs: GPU h200 (calibrated on h100); vLLM 0.33.0 (calibrated on 0.11.0)" in plan.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--calibration", "{missing}"], "no such calibration file"),
    (["--calibration", "{bad}"], "is not JSON"),
    (["--calibration", "{bad}", "--calibrate", "{log}"], "not both"),
    (["--calibrate", "{log}", "--available-kv-memory", "20GiB"], "nothing to correct"),
])
def test_bad_calibration_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    bad = tmp_path / "bad.cal"
    bad.write_text("{oops")
    names = {"missing": str(tmp_path / "none.cal"), "bad": str(bad), "log": str(write_log(tmp_path))}
    result = runner.invoke(app, [*QWEN[:-2], *[a.format(**names) for a in args]])
    assert result.exit_code == 1
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_a_log_without_a_device_needs_gpu(tmp_path: Path) -> None:
    result = runner.invoke(app, ["calibrate", str(write_log(tmp_path))])
    assert result.exit_code == 1
    assert "pass --gpu" in result.stderr


def test_a_log_without_a_budget_cannot_calibrate(tmp_path: Path) -> None:
    log = tmp_path / "short.log"
    log.write_text("INFO 10-01 12:00:00 [api_server.py:1896] vLLM API server version 0.11.0\n"
                   f"INFO 10-01 12:00:00 [utils.py:328] non-default args: {{'model': "
                   f"'{CONFIGS / 'llama-3.1-8b-instruct.json'}'}}\n")
    result = runner.invoke(app, ["calibrate", str(log), "--gpu", "h100"])
    assert result.exit_code == 1
    assert "Available KV cache memory" in result.stderr
