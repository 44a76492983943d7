"""`hkv simulate` end to end on tiny workloads: JSON shape, probe, errors."""

import json

from typer.testing import CliRunner

from hkv.cli.main import app

runner = CliRunner()
BASE = ["simulate", "gemma-3-27b", "--available-kv-memory", "2GiB", "--max-model-len", "4096"]


def test_workload_all_layouts_json():
    result = runner.invoke(app, BASE + ["--workload", "shared-prefix:n=40,prefix=1024,prompt=512,output=8",
                                        "--layout", "all", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    reports = {r["layout"]: r for r in doc["reports"]}
    assert set(reports) == {"hkv", "vllm", "vllm-no-hybrid", "partitioned"}
    for r in reports.values():
        assert r["num_finished"] == 40 and not r["interrupted"]
        assert r["runtime_build"] in ("python", "mypyc")
        # 40 prompts of 1,536 tokens share 1,024 (past the 1,024-token window, so sliding blocks get released)
        assert r["prefix_hit_rate"] > 0.4  # up to 39 x 1,024 of 40 x 1,536 tokens can hit
    # sliding groups release out-of-window blocks; the no-hybrid layout has none
    assert sum(g["early_released_blocks"] for g in reports["vllm"]["groups"] if g["kind"] == "sliding") > 0
    assert all(g["kind"] == "full" for g in reports["vllm-no-hybrid"]["groups"])


def test_probe_capacity_json_matches():
    result = runner.invoke(app, BASE + ["--probe-capacity", "--layout", "all", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["match"] and all(r["predicted"] == r["measured"] for r in doc["probe"])


def test_trace_and_errors(tmp_path):
    good = tmp_path / "t.jsonl"
    good.write_text('{"prompt_len": 40, "output_len": 3}\n{"arrival": 0.1, "prompt_len": 20, "output_len": 2}\n')
    result = runner.invoke(app, BASE + ["--trace", str(good), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["reports"][0]["num_finished"] == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt_len": 40, "output_len": 3}\n{"prompt_len": 0, "output_len": 3}\n')
    result = runner.invoke(app, BASE + ["--trace", str(bad)])
    assert result.exit_code == 1 and "line 2:" in result.stderr and result.stdout == ""
    for args in (["--workload", "fixd:n=3"], [], ["--workload", "fixed:n=1", "--trace", str(good)],
                 ["--workload", "fixed:n=1,prompt=5000"]):
        result = runner.invoke(app, BASE + args)
        assert result.exit_code == 1, (args, result.stdout)
        assert len(result.stderr.strip().splitlines()) == 1
