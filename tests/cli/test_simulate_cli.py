"""`hkv simulate` end to end on tiny workloads: JSON shape, probe, errors."""

import json

import pytest
from hkv.cli.main import app
from typer.testing import CliRunner

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


def test_trace(tmp_path):
    good = tmp_path / "t.jsonl"
    good.write_text('{"prompt_len": 40, "output_len": 3}\n{"arrival": 0.1, "prompt_len": 20, "output_len": 2}\n')
    result = runner.invoke(app, BASE + ["--trace", str(good), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["reports"][0]["num_finished"] == 2


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    root = tmp_path_factory.mktemp("traces")
    (root / "good.jsonl").write_text('{"prompt_len": 40, "output_len": 3}\n')
    (root / "bad.jsonl").write_text('{"prompt_len": 40, "output_len": 3}\n'
                                    '{"prompt_len": 0, "output_len": 3}\n')
    return {name: str(root / f"{file}.jsonl") for name, file in
            (("good", "good"), ("bad", "bad"), ("missing", "nope"))}


GEMMA = ["gemma-3-27b"]
# (args after `simulate`, exit code, fragment of the last stderr line); {name} names a trace of the fixture
BAD_INPUTS = [
    (BASE[1:] + ["--trace", "{bad}"], 1, "--trace {bad}: line 2:"),
    (BASE[1:] + ["--trace", "{missing}"], 1, "--trace {missing}: no such file"),
    (BASE[1:] + ["--workload", "fixd:n=3"], 1, "--workload kind 'fixd' is unknown (did you mean fixed?)"),
    (BASE[1:] + ["--workload", "fixed:n=0"], 1, "--workload n must be a positive integer"),
    (BASE[1:], 1, "give exactly one of --workload SPEC or --trace FILE"),
    (BASE[1:] + ["--workload", "fixed:n=1", "--trace", "{good}"], 1, "give exactly one of"),
    (BASE[1:] + ["--workload", "fixed:n=1,prompt=5000"], 1, "exceed --max-model-len 4,096"),
    # one request that cannot fit even alone (the runtime's OutOfBlocksError)
    (GEMMA + ["--available-kv-memory", "40MiB", "--max-model-len", "8192", "--workload",
              "fixed:n=1,prompt=8000,output=8"], 1, "(8000 tokens) does not fit in the KV cache"),
    (GEMMA + ["--available-kv-memory", "1KiB", "--workload", "fixed:n=1,prompt=80,output=8"], 1,
     "the KV budget of 1.00 KiB holds no block of the hkv layout: one block of pool 0 needs 655,360 bytes"),  # 5 slots x 16 tok x 16 heads x 128 x 2 (K, V) x 2 B
    (["deepseek-v3", "--gpu", "h100", "--probe-capacity"], 1,
     "deepseek-v3 does not fit: "),  # its FP8 weights, ~627 GiB, on one 80 GB card
    (["deepseek-v3", "--gpu", "h100", "--workload", "fixed:n=1"], 1, "GiB: raise --tp/--pp or use a larger GPU"),
    (GEMMA + ["--gpu", "h100", "--max-model-len", "200000", "--probe-capacity"], 1,
     "--max-model-len 200,000 exceeds the 131,072 positions of gemma-3-27b"),
    (BASE[1:] + ["--workload", "fixed:n=1", "--eviction", "foo"], 2, "Invalid value for '--eviction'"),
    (BASE[1:] + ["--workload", "fixed:n=1", "--layout", "foo"], 2, "Invalid value for '--layout'"),
    (BASE[1:] + ["--workload", "fixed:n=1", "--format", "xml"], 2, "Invalid value for '--format'"),
]


@pytest.mark.parametrize("args, code, fragment", BAD_INPUTS)
@pytest.mark.parametrize("fmt", ["human", "json"])
def test_bad_input_is_one_line_and_its_exit_code(traces, args, code, fragment, fmt):
    args = [a.format(**traces) for a in args]
    result = runner.invoke(app, ["simulate", "--format", fmt, *args])  # a later --format in args wins
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    if code == 1:
        assert len(lines) == 1 and lines[0].startswith("hkv: error: "), lines
    else:
        assert lines[-1].startswith("Error: ")
    assert fragment.format(**traces) in lines[-1]


def test_probe_mismatch_exits_3(monkeypatch):
    from hkv.runtime.kv_cache import capacity_probe

    real = capacity_probe.probe_capacity
    monkeypatch.setattr(capacity_probe, "probe_capacity", lambda layout, seq_len: real(layout, seq_len) + 1)
    result = runner.invoke(app, BASE + ["--gpu", "h100", "--probe-capacity"])
    assert result.exit_code == 3, result.stderr
    assert result.stderr.strip().splitlines() == [
        next(line for line in result.stderr.splitlines() if line.startswith("hkv: MISMATCH"))]
    assert "capacity probe" in result.stdout


def test_default_gpu_is_said_when_assumed():
    # an exact KV budget without --gpu: the GPU still sets max_num_batched_tokens (h100: 8,192)
    result = runner.invoke(app, BASE + ["--probe-capacity"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith("hkv: no --gpu given: planned for h100 (")
    doc = json.loads(runner.invoke(app, BASE + ["--probe-capacity", "--format", "json"]).stdout)
    assert doc["assumed"]["gpu"] == "h100" and doc["assumed"]["max_num_batched_tokens"] == 8192
    chosen = runner.invoke(app, BASE + ["--gpu", "h100", "--probe-capacity", "--format", "json"])
    assert json.loads(chosen.stdout)["assumed"] == {} and chosen.stderr == ""


def test_probe_reports_sustained_predicted_and_measured():
    result = runner.invoke(app, BASE + ["--gpu", "h100", "--probe-capacity", "--layout", "all", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    rows = {r["layout"]: r for r in json.loads(result.stdout)["probe"]}
    for r in rows.values():
        assert r["predicted_sustained"] == r["measured_sustained"]
        assert r["measured_sustained"] >= r["measured"]  # the worst-case gate never preempts
        assert r["output_len"] == 4096 // 8
        assert r["logged_concurrency"] == r["max_concurrency"]
    # Gemma's 52 sliding layers keep 1,024 tokens: past the gate's worst case (T = 16,384 covers
    # the whole request), the windows let the hybrid layouts run more than the logged figure.
    assert rows["vllm"]["measured_sustained"] > rows["vllm"]["logged_concurrency"]


def test_probe_sustained_mismatch_exits_3(monkeypatch):
    from hkv.runtime.simulation import sustained_probe

    real = sustained_probe.measure_sustained

    def one_more(layout, setup):
        m = real(layout, setup)
        return sustained_probe.SustainedMeasurement(m.sustained + 1, m.next_trial)

    monkeypatch.setattr(sustained_probe, "measure_sustained", one_more)
    result = runner.invoke(app, BASE + ["--gpu", "h100", "--probe-capacity", "--layout", "vllm"])
    assert result.exit_code == 3, result.stderr
    assert "sustained predicted" in result.stderr.strip().splitlines()[-1]


def test_the_vllm_layout_simulates_the_releases_prefix_caching_default():
    # vLLM 0.24 leaves prefix caching off for hybrids (0.26 turned it on): a shared-prefix workload
    # then hits nothing on the vllm layout unless --enable-prefix-caching says otherwise.
    def hits(*options):
        result = runner.invoke(app, ["simulate", "qwen3-next-80b-a3b", "--gpu", "h100", "--tp", "4", "--layout", "vllm",
                                     "--workload", "shared-prefix:n=8,prefix=2048,prompt=256,output=4",
                                     "--format", "json", *options])
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["reports"][0]["num_hit_tokens"]
    assert hits("--vllm-version", "0.24.0") == 0
    assert hits("--vllm-version", "0.24.0", "--enable-prefix-caching") > 0
    assert hits() > 0


# --- traces in the public formats, robust runs, progress ------------------------------------------

from pathlib import Path

from hkv.cli.simulation_progress import PlainProgress, ProgressConfig

TRACES = Path(__file__).parents[1] / "data" / "traces"


@pytest.mark.parametrize("name, fmt, limit", [("mooncake_conversation_excerpt.jsonl", "mooncake", 6),
                                              ("azure2023_conv_excerpt.csv", "azure", 8),
                                              ("burstgpt_handwritten.csv", "burstgpt", None)])
def test_public_trace_formats_replay(name, fmt, limit):
    args = BASE[:2] + ["--max-model-len", "16384", "--trace", str(TRACES / name), "--format", "json"]
    result = runner.invoke(app, args + ([] if limit is None else ["--trace-limit", str(limit)]))
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    expected = limit or 4  # BurstGPT: 5 rows, one failed (0 Response tokens)
    assert doc["trace"]["format"] == fmt and doc["trace"]["num_requests"] == expected
    assert doc["reports"][0]["num_finished"] == expected and doc["failed"] == []
    assert f"{fmt} format, {expected} requests replayed" in result.stderr


def test_too_long_requests_are_skipped_and_counted():
    # Excerpt lines 1-10 (6,758 ... 17,450 prompt tokens); at 8,192, lines 1 to 6 fit (6,758, 7,322, 7,236,
    # 2,290, 6,760, 4,834), 7 to 10 (23,141, 26,888, 10,498, 17,450) do not.
    result = runner.invoke(app, BASE[:2] + ["--max-model-len", "8192", "--trace",
                                            str(TRACES / "mooncake_conversation_excerpt.jsonl"),
                                            "--trace-window", ":2", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["reports"][0]["num_finished"] == 6
    assert doc["skipped_too_long"] == {"max_model_len": 8192, "num_skipped": 4, "first_request_id": "line-7",
                                       "first_prompt_len": 23141}
    assert ("skipped 4 request(s) longer than --max-model-len 8,192 allows (first: line-7, 23,141 prompt "
            "tokens), as vLLM rejects them; raise --max-model-len") in result.stderr


# gemma-3-27b at 2 GiB and 4,096 tokens: the vllm layout's pool holds less than one max-length
# request (the probe's "reserved" count is 0), the others hold one.
CRAMPED = ["simulate", "gemma-3-27b", "--available-kv-memory", "2GiB", "--max-model-len", "4096",
           "--workload", "fixed:n=2,prompt=3900,output=8"]


@pytest.mark.parametrize("fmt", ["human", "json"])
def test_layout_all_keeps_every_layout_when_one_cannot_hold_a_request(fmt):
    result = runner.invoke(app, CRAMPED + ["--layout", "all", "--format", fmt])
    assert result.exit_code == 0, result.stderr
    failed_line = next(line for line in result.stderr.splitlines() if "could not replay" in line)
    assert failed_line.startswith("hkv: layout vllm could not replay the workload: request req-0 (3900 tokens)")
    if fmt == "json":
        doc = json.loads(result.stdout)
        assert [f["layout"] for f in doc["failed"]] == ["vllm"]
        assert "request req-0" in doc["failed"][0]["reason"] and "does not fit" in doc["failed"][0]["reason"]
        assert {r["layout"] for r in doc["reports"]} == {"hkv", "vllm-no-hybrid", "partitioned"}
        assert all(r["num_finished"] == 2 for r in doc["reports"])
    else:
        assert "layouts that could not replay the workload" in result.stdout and "vllm-no-hybrid" in result.stdout


def test_no_layout_finished_is_one_line_naming_it():
    result = runner.invoke(app, CRAMPED + ["--layout", "vllm", "--format", "json"])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        ("hkv: error: vllm layout: request req-0 (3900 tokens) does not fit in the KV cache even with no other "
         "request running")]


def test_interrupted_run_prints_one_line_and_the_partial_reports(monkeypatch, tmp_path):
    # Ctrl-C arrives while the second layout pulls its third request. The trace reader is pure
    # Python in every build, so the interrupt reaches a compiled Simulator too.
    from hkv.runtime.simulation.traces import trace_source

    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(f'{{"arrival": {i}, "prompt_len": 64, "output_len": 4}}\n' for i in range(4)))
    real_iter = trace_source.TraceSource.__iter__
    passes = []

    def interrupted_second_pass(self):
        passes.append(1)
        for n, request in enumerate(real_iter(self)):
            if len(passes) == 2 and n == 2:
                raise KeyboardInterrupt
            yield request

    monkeypatch.setattr(trace_source.TraceSource, "__iter__", interrupted_second_pass)
    result = runner.invoke(app, BASE + ["--trace", str(trace), "--layout", "all", "--format", "json"])
    assert result.exit_code == 130
    assert "hkv: interrupted: partial results of the 2 layout(s) run so far" in result.stderr.splitlines()
    reports = json.loads(result.stdout)["reports"]
    assert [(r["layout"], r["interrupted"]) for r in reports] == [("hkv", False), ("vllm", True)]
    assert reports[0]["num_finished"] == 4 and reports[1]["num_finished"] < 4


@pytest.mark.parametrize("args, fragment", [
    (["--trace", "{unknown}"], "hkv: error: --trace {unknown}: cannot tell the format from its first line"),
    (["--trace", "{unknown}"], "name one with --trace-format"),
    (["--workload", "fixed:n=1", "--trace-limit", "3"], "apply to --trace FILE only"),
    (["--trace", "{good}", "--trace-window", "5"], "--trace-window must be START:END in seconds"),
    (["--trace", "{good}", "--trace-format", "azure"], "line 1: the header lacks column(s) TIMESTAMP"),
])
def test_trace_option_errors(traces, tmp_path, args, fragment):
    unknown = tmp_path / "u.txt"
    unknown.write_text("a,b,c\n")
    names = {**traces, "unknown": str(unknown)}
    result = runner.invoke(app, BASE + [a.format(**names) for a in args])
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment.format(**names) in lines[0]


def test_plain_progress_writes_a_line_every_interval():
    now = [0.0]
    lines: list[str] = []
    progress = PlainProgress("hkv", lambda: 12.34, ProgressConfig(interval_s=5.0, clock=lambda: now[0]),
                             lines.append)
    for t, done in ((1.0, 1), (5.5, 2), (6.0, 3), (11.0, 4)):
        now[0] = t
        progress(done, 10)
    assert lines == ["hkv: simulating hkv: 2 / 10 requests finished, 12.3 s simulated, 6 s elapsed",
                     "hkv: simulating hkv: 4 / 10 requests finished, 12.3 s simulated, 11 s elapsed"]


def test_progress_lines_reach_stderr_when_it_is_not_a_terminal(monkeypatch):
    from hkv.cli import simulation_progress

    monkeypatch.setattr(simulation_progress, "ProgressConfig",
                        lambda: ProgressConfig(interval_s=0.0))  # a line per finished request
    result = runner.invoke(app, BASE + ["--workload", "fixed:n=3,prompt=64,output=4", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    progress = [line for line in result.stderr.splitlines() if line.startswith("hkv: simulating hkv: ")]
    assert progress[-1].startswith("hkv: simulating hkv: 3 / 3 requests finished, ")
