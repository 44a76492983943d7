"""sweep_split's candidate lengths and choice of the best split (hand-computed), and one sweep
through the CLI."""

import json
from array import array

import pytest
from typer.testing import CliRunner

from hkv.cli.main import app
from hkv.runtime.simulation.split_sweep import SplitTrial, best_split, split_candidates
from hkv.runtime.simulation.workload_request import WorkloadRequest


def _request(prompt_len: int, output_len: int) -> WorkloadRequest:
    return WorkloadRequest("r", 0.0, array("q", [1] * prompt_len), array("q", [2] * output_len))


@pytest.mark.parametrize("lengths, max_model_len, expected", [
    # mean (900 + 100) = 1,000; powers of two 256..8,192; max 8,192 already a power
    ([(900, 100)], 8192, [256, 512, 1000, 1024, 2048, 4096, 8192]),
    # mean (1,000 + 24 + 2,000 + 48) // 2 = 1,536; max 3,000 is not a power of two
    ([(1000, 24), (2000, 48)], 3000, [256, 512, 1024, 1536, 2048, 3000]),
    # mean 1,024 coincides with a power of two: listed once
    ([(1000, 24)], 1024, [256, 512, 1024]),
    # max below 256: only the mean and the max
    ([(100, 20)], 200, [120, 200]),
])
def test_candidates(lengths, max_model_len, expected):
    requests = [_request(p, o) for p, o in lengths]
    assert split_candidates(requests, max_model_len) == expected


def test_best_is_fastest_then_fewest_preemptions():
    def trial(split, seconds, preemptions):
        return SplitTrial(split, seconds, 10, preemptions, 1.0, 0.0, 5)

    trials = [trial(256, 9.0, 0), trial(512, 7.5, 3), trial(1024, 7.5, 1), trial(2048, 8.0, 0)]
    assert best_split(trials).expected_avg_seq_len == 1024


def test_cli_sweep_json():
    result = CliRunner().invoke(app, [
        "simulate", "gemma-3-27b", "--available-kv-memory", "2GiB", "--max-model-len", "2048",
        "--workload", "fixed:n=20,prompt=500,output=12", "--sweep-split", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    # mean 512 is a power of two: 256, 512, 1,024, 2,048
    assert [t["expected_avg_seq_len"] for t in doc["sweep"]] == [256, 512, 1024, 2048]
    assert all(t["num_finished"] == 20 for t in doc["sweep"])
    assert doc["best_expected_avg_seq_len"] in (256, 512, 1024, 2048)
