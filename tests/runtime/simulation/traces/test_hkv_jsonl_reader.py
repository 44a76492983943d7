"""hkv's own JSONL traces: valid lines become requests; bad lines are all reported with their numbers."""

import json

import pytest
from hkv.planner.errors import InvalidInputError
from hkv.runtime.simulation.traces.trace_source import TraceSource


def write(tmp_path, lines):
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines))
    return path


def test_trace_fields(tmp_path):
    path = write(tmp_path, [
        {"arrival": 0.5, "prompt_len": 8, "output_len": 2, "prefix_id": "sys", "prefix_len": 6},
        {"arrival": 0.0, "prompt_tokens": [5, 6, 7], "output_len": 1},
        {"arrival": 1.0, "prompt_len": 9, "output_len": 2, "prefix_id": "sys"},
        {"arrival": 2.0, "prompt_len": 3, "output_len": 1, "session": "a"},
        {"arrival": 3.0, "prompt_len": 2, "output_len": 1, "session": "a"},
    ])
    source = TraceSource(path)
    assert source.format.name == "hkv" and source.summary.sorted_in_memory  # line 2 arrives before line 1
    reqs = list(source)
    assert [r.arrival_s for r in reqs] == [0.0, 0.5, 1.0, 2.0, 3.0]  # sorted by arrival, as written
    assert [r.request_id for r in reqs] == ["line-2", "line-1", "line-3", "line-4", "line-5"]
    assert list(reqs[0].prompt_token_ids) == [5, 6, 7]
    assert reqs[1].prompt_token_ids[:6] == reqs[2].prompt_token_ids[:6]  # shared 6-token prefix
    assert reqs[1].prompt_token_ids[6:] != reqs[2].prompt_token_ids[6:8]
    # second turn of session a: 3 + 1 (turn 1 prompt + output) + 2 new tokens, after request 3
    assert reqs[4].prompt_len == 6 and reqs[4].depends_on == 3
    assert list(source.lengths()) == [(3, 1), (8, 2), (9, 2), (3, 1), (6, 1)]


def test_bad_lines_are_numbered(tmp_path):
    path = write(tmp_path, [
        {"prompt_len": 4, "output_len": 1},
        "{not json",
        {"prompt_len": 4},
        {"prompt_len": -3, "output_len": 1},
        {"prompt_len": 4, "prompt_tokens": [1], "output_len": 1},
        {"prompt_len": 4, "output_len": 1, "colour": "red"},
        {"prompt_len": 4, "output_len": 1, "session": [1]},
    ])
    with pytest.raises(InvalidInputError) as err:
        TraceSource(path)
    text = str(err.value)
    for number in (2, 3, 4, 5, 6):
        assert f"line {number}:" in text
    assert "line 1:" not in text
    assert "unknown field(s) colour" in text and "(+1 more bad lines)" in text  # 6 bad, the first 5 named


@pytest.mark.parametrize("content, fragment", [(b"", "no requests"), (b"\n\n", "no requests"),
                                               (b"\xff\xfe\x00", "UTF-8")])
def test_empty_or_binary(tmp_path, content, fragment):
    path = tmp_path / "t.jsonl"
    path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=fragment):
        TraceSource(path)


def test_missing_file(tmp_path):
    with pytest.raises(InvalidInputError, match="no such file"):
        TraceSource(tmp_path / "nope.jsonl")
