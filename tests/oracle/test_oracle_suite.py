"""Main-suite entry to the vLLM oracle: runs tests/oracle/vllm_side inside `.venv-vllm`.

The oracle suite compares hkv's `vllm` layouts with vLLM 0.32's own KV cache planning for every
catalog model, and with the real vLLM CPU engine on tiny saved models (about 3 minutes, most of
it five engine starts). It needs the separate oracle venv; build it with

    bash tests/oracle/setup_vllm_env.sh

Without that venv this test is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ORACLE_PY = REPO_ROOT / ".venv-vllm" / "bin" / "python"
SUITE = REPO_ROOT / "tests" / "oracle" / "vllm_side"
TIMEOUT_S = 20 * 60


def _oracle_env_ready() -> str | None:
    """None when the oracle venv imports vLLM, else why not."""
    if not ORACLE_PY.exists():
        return f"{ORACLE_PY} does not exist"
    # -P and cwd=/: keep the repository root (its kernels/ folder) off sys.path.
    probe = subprocess.run([str(ORACLE_PY), "-P", "-c", "import vllm.config"], cwd="/",
                           capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        return f"import vllm.config fails there: {probe.stderr.strip().splitlines()[-1:]}"
    return None


@pytest.mark.oracle
@pytest.mark.slow
def test_vllm_oracle_suite() -> None:
    if Path(sys.prefix).resolve() == ORACLE_PY.parent.parent.resolve():
        pytest.skip("already running inside .venv-vllm: tests/oracle/vllm_side is collected directly")
    why = _oracle_env_ready()
    if why:
        pytest.skip(f"vLLM oracle env not built ({why}): run bash tests/oracle/setup_vllm_env.sh")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "VLLM_CPU_KVCACHE_SPACE")}
    cmd = [str(ORACLE_PY), "-m", "pytest", str(SUITE), "-x", "-p", "no:cacheprovider",
           "-W", "ignore::DeprecationWarning"]
    try:
        proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as err:
        out = (err.stdout or b"").decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        pytest.fail(f"vLLM oracle suite timed out after {TIMEOUT_S} s:\n{out[-8000:]}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"vLLM oracle suite failed (rc {proc.returncode}):\n{out[-8000:]}"
    print(out.strip().splitlines()[-1] if out.strip() else "")
