"""hkv's SGLang start-up verdict (planner/startup/sglang_verdict.py) against SGLang 0.5.23's own
`resolve_max_num_reqs` (srt/mem_cache/kv_cache_configurator.py l.3119).

`sglang_harness.py` runs SGLang's pool sizing for each case in `.venv-sglang`, with a log handler
on SGLang's loggers per case; the lines `resolve_max_num_reqs` logs ("max_running_requests is
capped to N by the mamba state cache (...)", l.3141, and "max_running_requests was reduced from
the requested R to N ...", l.3163) come back beside the case's result. hkv's `plan_sglang` gets the
same card and free-memory readings. Compared: the cap and the state slots number for number; the
"capped" warning SGLang prints equals hkv's `max_running_requests_capped_by_mamba` message, and
SGLang prints it exactly when hkv predicts it; the "reduced" line matches hkv's
`RunningRequests.reduced_from`. A prediction one request off must fail (`test_off_by_one_fails`).
Skipped when `.venv-sglang` is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.config_extras import SglangConfigExtras
from hkv.planner.engines.sglang.plan import SglangPlan, plan_sglang
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.startup import sglang_startup

REPO_ROOT = Path(__file__).resolve().parents[3]
SGLANG_PY = REPO_ROOT / ".venv-sglang" / "bin" / "python"
HARNESS_DIR = Path(__file__).resolve().parent
CATALOG = REPO_ROOT / "model_specs" / "catalog"
MIB, GIB = 1 << 20, 1 << 30
H100 = ("NVIDIA H100 80GB HBM3", 81559 * MIB)  # nvidia-smi memory.total, as SGLang reads the card
CAPPED, REDUCED = "max_running_requests is capped to ", "max_running_requests was reduced from "

# The harness's main(), with each case's SGLang log records kept: {"result": ..., "lines": [...]}.
_RUN = """
import contextlib, gc, json, logging, sys, warnings
sys.path.insert(0, sys.argv[1])
import sglang_harness as h

class Keep(logging.Handler):
    lines = []
    def emit(self, record):
        self.lines.append(record.getMessage())

logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
keep = Keep(logging.WARNING)
logging.getLogger("sglang").addHandler(keep)
logging.getLogger("sglang").setLevel(logging.WARNING)
warnings.filterwarnings("ignore")
with contextlib.redirect_stdout(sys.stderr):
    h.import_sglang()
cases = json.load(sys.stdin)["cases"]
gc.freeze()
card = h.FakeCard(name="", total_bytes=0, free_bytes=0)
card.install()
h._one_rank_world()
for case in cases:
    Keep.lines.clear()
    result = h._one(case, card)
    print(json.dumps({"result": result, "lines": list(Keep.lines)}), flush=True)
"""

# (id, model, share of the card free after the weights, server arguments given to both sides)
CASES: list[tuple[str, str, float, dict[str, Any]]] = [
    ("nemotron3-55", "nemotron-3-nano-30b-a3b", 0.55, {}),
    ("nemotron3-30-ctx32k", "nemotron-3-nano-30b-a3b", 0.30, {"context_length": 32768}),
    ("nemotron3-55-mrr64", "nemotron-3-nano-30b-a3b", 0.55, {"max_running_requests": 64}),
    ("nemotron3-55-mamba05", "nemotron-3-nano-30b-a3b", 0.55, {"mamba_full_memory_ratio": 0.5}),
    ("qwen3next-30", "qwen3-next-80b-a3b", 0.30, {}),
    ("qwen3next-80", "qwen3-next-80b-a3b", 0.80, {}),
    ("qwen3next-55-slots40", "qwen3-next-80b-a3b", 0.55, {"max_mamba_cache_size": 40}),
    ("qwen3next-55-mrr8-slots40", "qwen3-next-80b-a3b", 0.55,
     {"max_mamba_cache_size": 40, "max_running_requests": 8}),
    ("nemotronh8b-55", "nemotron-h-8b-base-8k", 0.55, {}),
    ("kimi-linear-55", "kimi-linear-48b-a3b-instruct", 0.55, {}),
    ("llama8b-55", "llama-3.1-8b-instruct", 0.55, {}),
    ("llama8b-55-mrr1M", "llama-3.1-8b-instruct", 0.55, {"max_running_requests": 1_000_000}),
]


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}


def _free(share: float) -> tuple[int, int]:
    total = H100[1]
    return total - GIB // 2, int(total * share)


@pytest.fixture(scope="module")
def sglang_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    if not SGLANG_PY.exists():
        pytest.skip(f"SGLang oracle env not built ({SGLANG_PY} does not exist): "
                    "bash tests/oracle/setup_sglang_env.sh")
    root = tmp_path_factory.mktemp("sglang_configs")
    cases = []
    for case_id, model, share, server_args in CASES:
        (root / case_id).mkdir()
        (root / case_id / "config.json").write_text((CATALOG / f"{model}.json").read_text())
        before, after = _free(share)
        cases.append({"id": case_id, "config_dir": str(root / case_id), "gpu_name": H100[0],
                      "gpu_total_bytes": H100[1], "free_before_load_bytes": before,
                      "free_after_weights_bytes": after, "tp": 1, "context_length": None,
                      "server_args": server_args})
    proc = subprocess.run([str(SGLANG_PY), "-P", "-c", _RUN, str(HARNESS_DIR)],
                          input=json.dumps({"cases": cases}), cwd="/", env=_clean_env(), check=False,
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 and not proc.stdout.strip():
        pytest.skip(f"SGLang's sizing modules do not run there: {proc.stderr.strip().splitlines()[-1:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    runs = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [r["result"]["id"] for r in runs] == [c["id"] for c in cases]
    return {r["result"]["id"]: r for r in runs}


def hkv_plan(model: str, share: float, server_args: dict[str, Any]) -> SglangPlan:
    spec = load_model_spec(model)
    extras = SglangConfigExtras.from_hf_config(json.loads((CATALOG / f"{model}.json").read_text()))
    before, after = _free(share)
    return plan_sglang(spec, SglangServerArgs(tp_size=1, **server_args), gpu=None, gpu_memory_bytes=H100[1],
                       extras=extras, free_before_load_bytes=before, weights_bytes=before - after)


def assert_same_cap(planned: SglangPlan, run: dict[str, Any]) -> None:
    theirs, lines = run["result"], run["lines"]
    assert "error" not in theirs, theirs
    pools = planned.pools
    assert (pools.max_running_requests, pools.max_mamba_cache_size) == (
        theirs["max_running_requests"], theirs["max_mamba_cache_size"])
    ours = [w.message for w in sglang_startup(planned).warnings
            if w.code == "max_running_requests_capped_by_mamba"]
    assert ours == [line for line in lines if line.startswith(CAPPED)]
    reduced = [line for line in lines if line.startswith(REDUCED)]
    running = planned.resolution.running
    if running.reduced_from is None:
        assert reduced == []
    else:
        assert reduced == [(f"max_running_requests was reduced from the requested {running.reduced_from} "
                            f"to {pools.max_running_requests} (per dp worker) due to the available KV cache "
                            "capacity.")]


@pytest.mark.oracle_sglang
@pytest.mark.parametrize("case_id, model, share, server_args", CASES, ids=[c[0] for c in CASES])
def test_cap_and_warning_equal_sglangs(case_id: str, model: str, share: float, server_args: dict[str, Any],
                                       sglang_runs: dict[str, dict[str, Any]]) -> None:
    assert_same_cap(hkv_plan(model, share, server_args), sglang_runs[case_id])


@pytest.mark.oracle_sglang
def test_cases_cover_both_answers(sglang_runs: dict[str, dict[str, Any]]) -> None:
    """The table holds hybrids SGLang caps by the state pool and hybrids it does not."""
    capped = {i for i, r in sglang_runs.items() if any(li.startswith(CAPPED) for li in r["lines"])}
    hybrids = {c[0] for c in CASES if "llama" not in c[1]}
    assert capped and capped < hybrids
    assert any(any(li.startswith(REDUCED) for li in r["lines"]) for r in sglang_runs.values())


@pytest.mark.oracle_sglang
def test_off_by_one_fails(sglang_runs: dict[str, dict[str, Any]]) -> None:
    """hkv's cap one request low (so its warning text too) fails the comparison."""
    case_id, model, share, server_args = CASES[0]
    planned = hkv_plan(model, share, server_args)
    run = sglang_runs[case_id]
    assert_same_cap(planned, run)
    assert any(li.startswith(CAPPED) for li in run["lines"]), "the case must be one SGLang caps"
    res = planned.resolution
    pools = replace(res.pools, max_running_requests=res.pools.max_running_requests - 1)
    wrong = replace(planned, resolution=replace(res, pools=pools))
    with pytest.raises(AssertionError):
        assert_same_cap(wrong, run)
    # the text alone, the cap left right: one state slot fewer in the warning
    wrong = replace(planned, resolution=replace(res, mamba=replace(res.mamba, slots=res.mamba.slots - 1)))
    with pytest.raises(AssertionError, match="max_mamba_cache_size"):
        assert_same_cap(replace(wrong, resolution=replace(wrong.resolution, pools=res.pools)), run)
