"""DeepSeek-V4's start-up lines: what SGLang 0.5.23's DSV4PoolConfigurator itself prints ("DSV4 SWA
sizing: ...", "DSV4 memory calculation: ...", "DSV4 pool sizes: ...", twice where --max-total-tokens
caps the pool) must be hkv's predicted lines, text for text, for the same card and free memory.

`sglang_harness.py` runs SGLang's own sizing for one case with the root logger at INFO (one
subprocess a case, so that each case's lines are its own). The pool object's line and the
scheduler's come after the pools are built, which the harness does not do. Skipped when
`.venv-sglang` does not import SGLang's sizing modules.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.config_extras import SglangConfigExtras
from hkv.planner.engines.sglang.plan import plan_sglang
from hkv.planner.engines.sglang.server_args import SglangServerArgs

REPO_ROOT = Path(__file__).resolve().parents[3]
SGLANG_PY = REPO_ROOT / ".venv-sglang" / "bin" / "python"
HARNESS_DIR = Path(__file__).resolve().parent
CONFIG = REPO_ROOT / "model_specs" / "catalog" / "deepseek-v4-flash.json"
MIB, GIB = 1 << 20, 1 << 30
GPUS = {"h100": ("NVIDIA H100 80GB HBM3", 81559 * MIB), "h200": ("NVIDIA H200", 143771 * MIB)}
DSV4_PREFIX = "DSV4 "
_RUN = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
sys.path.insert(0, sys.argv[1])
import sglang_harness
sys.exit(sglang_harness.main([]))
"""
# (card, share of the card free after the weights, server arguments on both sides)
CASES = [("h100", 0.55, {}), ("h200", 0.80, {"max_total_tokens": 100_000}), ("h100", 0.55, {"max_running_requests": 64})]


def _sglang_dsv4_lines(tmp_path: Path, gpu: str, share: float, server_args: dict[str, Any]) -> list[str]:
    if not SGLANG_PY.exists():
        pytest.skip(f"SGLang oracle env not built ({SGLANG_PY} does not exist): bash tests/oracle/setup_sglang_env.sh")
    (tmp_path / "config.json").write_text(CONFIG.read_text())
    name, total = GPUS[gpu]
    case = {"id": "dsv4", "config_dir": str(tmp_path), "gpu_name": name, "gpu_total_bytes": total,
            "free_before_load_bytes": total - GIB // 2, "free_after_weights_bytes": int(total * share), "tp": 1,
            "context_length": None, "server_args": server_args}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    proc = subprocess.run([str(SGLANG_PY), "-P", "-c", _RUN, str(HARNESS_DIR)], input=json.dumps({"cases": [case]}),
                          cwd="/", env=env, check=False, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and not proc.stdout.strip():
        pytest.skip(f"SGLang's sizing modules do not run in .venv-sglang: {proc.stderr.strip().splitlines()[-1:]}")
    result = json.loads(proc.stdout.splitlines()[-1])
    assert "error" not in result, result
    return [line for line in proc.stderr.splitlines() if line.startswith(DSV4_PREFIX)]


@pytest.mark.oracle_sglang
@pytest.mark.parametrize(("gpu", "share", "server_args"), CASES, ids=["h100-55", "h200-80-max-total-tokens",
                                                                      "h100-55-mrr64"])
def test_dsv4_lines_equal_sglangs(tmp_path: Path, gpu: str, share: float, server_args: dict[str, Any]) -> None:
    theirs = _sglang_dsv4_lines(tmp_path, gpu, share, server_args)
    total = GPUS[gpu][1]
    before, after = total - GIB // 2, int(total * share)
    plan = plan_sglang(load_model_spec("deepseek-v4-flash"), SglangServerArgs(**server_args), gpu=None,
                       gpu_memory_bytes=total, extras=SglangConfigExtras.from_hf_config(json.loads(CONFIG.read_text())),
                       free_before_load_bytes=before, weights_bytes=before - after)
    ours = [line for line in plan.start_up_lines() if line.startswith(DSV4_PREFIX)]
    assert len(theirs) == (5 if "max_total_tokens" in server_args else 3)
    assert ours == theirs
