"""`hkv explain-log` on lines SGLang 0.5.23 itself printed (the SGLang oracle, log side).

`sglang_harness.py` runs SGLang's own pool sizing for a case (a card, its free memory before and
after the weights); with the root logger at INFO, SGLang's pool configurator and request cap print
their start-up lines ("Use sliding window memory pool. ...", "max_running_requests is capped to N
by the mamba state cache (...)") as they would on a real card. Those lines, read by hkv's reader,
must be reproduced by hkv's pools: at the rest SGLang sized them from (--available-kv-memory), and
from the free memory the log would print beside them ("Load weight begin/end. avail mem=" and the
server_args dump, written here from SGLang's format strings with the case's own inputs). Skipped
when `.venv-sglang` does not import SGLang's sizing modules.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hkv.cli.main import app
from typer.testing import CliRunner

REPO_ROOT = Path(__file__).resolve().parents[3]
SGLANG_PY = REPO_ROOT / ".venv-sglang" / "bin" / "python"
HARNESS_DIR = Path(__file__).resolve().parent
CATALOG = REPO_ROOT / "model_specs" / "catalog"
MIB, GIB = 1 << 20, 1 << 30
H100 = ("NVIDIA H100 80GB HBM3", 81559 * MIB)  # nvidia-smi memory.total, as SGLang reads the card
# SGLang's own logger, configured before the harness (whose basicConfig is then a no-op).
_RUN = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="[%(asctime)s TP0] %(message)s")
sys.path.insert(0, sys.argv[1])
import sglang_harness
sys.exit(sglang_harness.main([]))
"""
runner = CliRunner()

# (model, share of the card free after the weights, the line SGLang must print)
CASES = [("gpt-oss-120b", 0.55, "Use sliding window memory pool. full_layer_tokens="),
         ("llama-4-scout-17b-16e-instruct", 0.55, "Use sliding window memory pool. full_layer_tokens="),
         ("qwen3-next-80b-a3b", 0.30, "max_running_requests is capped to ")]


def _sglang_lines(tmp_path: Path, model: str, share: float) -> tuple[dict[str, Any], list[str]]:
    """SGLang's result for the case and the log lines it printed."""
    if not SGLANG_PY.exists():
        pytest.skip(f"SGLang oracle env not built ({SGLANG_PY} does not exist): bash tests/oracle/setup_sglang_env.sh")
    (tmp_path / model).mkdir()
    (tmp_path / model / "config.json").write_text((CATALOG / f"{model}.json").read_text())
    total = H100[1]
    case = {"id": model, "config_dir": str(tmp_path / model), "gpu_name": H100[0], "gpu_total_bytes": total,
            "free_before_load_bytes": total - GIB // 2, "free_after_weights_bytes": int(total * share), "tp": 1,
            "context_length": None, "server_args": {}}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    proc = subprocess.run([str(SGLANG_PY), "-P", "-c", _RUN, str(HARNESS_DIR)], input=json.dumps({"cases": [case]}),
                          cwd="/", env=env, check=False, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "Error" in proc.stderr and not proc.stdout.strip():
        pytest.skip(f"SGLang's sizing modules do not run there: {proc.stderr.strip().splitlines()[-1:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "error" not in result, result
    return {**case, **result}, proc.stderr.splitlines()


def _explain(tmp_path: Path, lines: list[str], *args: str) -> dict[str, Any]:
    path = tmp_path / "sglang.log"
    path.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["explain-log", str(path), *args, "--format", "json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


@pytest.mark.oracle_sglang
@pytest.mark.parametrize(("model", "share", "marker"), CASES, ids=[c[0] for c in CASES])
def test_sglang_printed_lines_reproduced(tmp_path: Path, model: str, share: float, marker: str) -> None:
    result, stderr = _sglang_lines(tmp_path, model, share)
    printed = [line for line in stderr if marker in line]
    assert printed, f"SGLang printed no {marker!r} line:\n" + "\n".join(stderr[-20:])
    # 1. at the rest SGLang sized its pools from
    doc = _explain(tmp_path, printed, "--model", model, "--available-kv-memory", str(result["available_bytes"]))
    assert doc["engine"] == "sglang" and doc["budget_source"] == "given"
    assert doc["checks"] and all(c["ok"] for c in doc["checks"]), doc["checks"]
    # 2. from the free memory SGLang prints before and after the weights (get_available_gpu_memory:
    # bytes / 2^30, "%.2f GB"), with its resolved mem_fraction_static in the server_args dump
    before, after = result["free_before_load_bytes"] / GIB, result["free_after_weights_bytes"] / GIB
    log = [f"[TP0] server_args={{'model_path': '{model}', 'tp_size': 1, "
           f"'mem_fraction_static': {result['mem_fraction_static']!r}}}",
           f"[TP0] Load weight begin. avail mem={before:.2f} GB",
           f"[TP0] Load weight end. elapsed=1.00 s, type=X, avail mem={after:.2f} GB, "
           f"mem usage={before - after:.2f} GB.", *printed]
    doc = _explain(tmp_path, log, "--model", model)
    assert doc["budget_source"] == "log" and all(c["ok"] for c in doc["checks"]), doc["checks"]
    low, high = doc["budget_band_bytes"]
    assert low <= result["available_bytes"] <= high
