"""`hkv simulate` sizes the split pools for the workload it replays (planner/capacity/workload_lengths.py)."""

import json

from hkv.cli.main import app
from typer.testing import CliRunner

runner = CliRunner()
QWEN = ["simulate", "qwen3-next-80b-a3b", "--gpu", "h100", "--tp", "4", "--layout", "hkv", "--format", "json"]


def _run(tmp_path, *extra):
    trace = tmp_path / "t.jsonl"
    # Means by hand: prompts 1,000 and 3,000, outputs 100 and 300 -> (1,100 + 3,300) / 2 = 2,200 tokens.
    trace.write_text('{"prompt_len": 1000, "output_len": 100}\n{"arrival": 0.5, "prompt_len": 3000, "output_len": 300}\n')
    result = runner.invoke(app, QWEN + ["--trace", str(trace), *extra])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_the_hkv_layout_is_sized_for_the_replayed_trace(tmp_path):
    doc, stderr = _run(tmp_path)
    assert doc["expected_avg_seq_len"] == 2200
    assert "sized for this workload's mean request of 2,200 tokens" in stderr
    assert doc["reports"][0]["num_finished"] == 2


def test_expected_avg_seq_len_wins_over_the_trace(tmp_path):
    doc, stderr = _run(tmp_path, "--expected-avg-seq-len", "5000")
    assert doc["expected_avg_seq_len"] == 5000
    assert "sized for this workload" not in stderr


def test_auto_eviction_by_layout(tmp_path):
    # Qwen3-Next's layouts hold recurrent state: LRU unless --eviction says otherwise.
    doc, _ = _run(tmp_path)
    assert doc["reports"][0]["eviction_policy"] == "lru"
    doc, _ = _run(tmp_path, "--eviction", "group_aware")
    assert doc["reports"][0]["eviction_policy"] == "group_aware"
