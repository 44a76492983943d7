"""Each public format on excerpts of the published files (tests/data/traces/README.md): told by
content, and its fields as hand-read from the excerpt lines."""

from pathlib import Path

import pytest
from hkv.planner.errors import InvalidInputError
from hkv.runtime.simulation.traces.azure_reader import timestamp_s
from hkv.runtime.simulation.traces.trace_options import TraceOptions
from hkv.runtime.simulation.traces.trace_source import TraceSource

DATA = Path(__file__).parents[3] / "data" / "traces"

# (file, format told by content, requests, the first three as (id, arrival s, prompt, output),
#  lines the trace marks as not served: (reason fragment, count, first line))
EXCERPTS = [
    ("mooncake_conversation_excerpt.jsonl", "mooncake", 41,
     [("line-1", 0.0, 6758, 500), ("line-2", 0.0, 7322, 490), ("line-3", 0.0, 7236, 794)], None),
    ("azure2023_conv_excerpt.csv", "azure", 40,
     # 18:15:46.6805900, 18:15:50.9951690 (+4.3145790 s), 18:15:51.2224670 (+4.5418770 s)
     [("line-2", 0.0, 374, 44), ("line-3", 4.314579, 396, 109), ("line-4", 4.541877, 879, 55)], None),
    ("azure2023_code_excerpt.csv", "azure", 40,
     # 18:17:03.9799600, 18:17:04.0319600 (+0.052 s)
     [("line-2", 0.0, 4808, 10), ("line-3", 0.052, 3180, 8)], None),
    ("azure2024_handwritten.csv", "azure", 3,
     # 00:00:00+00:00, 00:00:00.009930+00:00, (line 4: 0 GeneratedTokens), 00:00:02.25+00:00
     [("line-2", 0.0, 2048, 31), ("line-3", 0.00993, 512, 128), ("line-5", 2.25, 300, 64)],
     ("0 ContextTokens or GeneratedTokens", 1, 4)),
    ("burstgpt_handwritten.csv", "burstgpt", 4,
     # Timestamps 5, 45, 118, (120: 0 Response tokens), 121.5 s
     [("line-2", 0.0, 472, 18), ("line-3", 40.0, 1087, 230), ("line-4", 113.0, 417, 276)],
     ("0 Response tokens (a failed request)", 1, 5)),
]


@pytest.mark.parametrize("name, fmt, count, first, skipped", EXCERPTS)
def test_excerpt_is_told_by_content_and_read(name, fmt, count, first, skipped):
    source = TraceSource(DATA / name)
    assert source.format.name == fmt
    assert source.num_requests == len(source) == count
    requests = list(source)
    assert len(requests) == count
    got = [(r.request_id, r.arrival_s, r.prompt_len, r.output_len) for r in requests[:len(first)]]
    for (rid, arrival_s, prompt_len, output_len), want in zip(got, first):
        assert (rid, prompt_len, output_len) == (want[0], want[2], want[3])
        assert arrival_s == pytest.approx(want[1], abs=1e-6)
    assert [r.arrival_s for r in requests] == sorted(r.arrival_s for r in requests)
    if skipped is None:
        assert source.summary.skipped == ()
    else:
        (skip,) = source.summary.skipped
        assert skipped[0] in skip.reason and (skip.num_lines, skip.first_line) == skipped[1:]


def test_mooncake_times_are_milliseconds():
    requests = list(TraceSource(DATA / "mooncake_conversation_excerpt.jsonl"))
    assert requests[10].arrival_s == 3.0  # line 11: "timestamp": 3000
    assert requests[40].request_id == "line-41" and requests[40].arrival_s == 48.0  # "timestamp": 48000


@pytest.mark.parametrize("text, seconds_after_2023_11_16", [
    ("2023-11-16 18:15:46.6805900", 18 * 3600 + 15 * 60 + 46.68059),
    ("2023-11-16T18:15:46Z", 18 * 3600 + 15 * 60 + 46),
    ("2023-11-16 20:15:46.5+02:00", 18 * 3600 + 15 * 60 + 46.5),
    ("2023-11-16 18:15:46-01:30", 19 * 3600 + 45 * 60 + 46),
])
def test_azure_timestamps(text, seconds_after_2023_11_16):
    midnight = 1700092800  # 2023-11-16 00:00:00 UTC
    assert timestamp_s(text) - midnight == pytest.approx(seconds_after_2023_11_16, abs=1e-6)


def test_format_can_be_named(tmp_path):
    # A BurstGPT file read as Azure: the header says which columns are missing, on line 1.
    with pytest.raises(InvalidInputError, match=r"line 1: the header lacks column\(s\) TIMESTAMP, ContextTokens"):
        TraceSource(DATA / "burstgpt_handwritten.csv", TraceOptions(format="azure"))
    assert TraceSource(DATA / "burstgpt_handwritten.csv", TraceOptions(format="burstgpt")).num_requests == 4


@pytest.mark.parametrize("content, fragment", [
    ("a,b,c\n1,2,3\n", "cannot tell the format from its first line ('a,b,c'); hkv reads mooncake (JSONL"),
    ("hello\n", "name one with trace_format"),
])
def test_unknown_format_names_the_formats(tmp_path, content, fragment):
    path = tmp_path / "t.txt"
    path.write_text(content)
    with pytest.raises(InvalidInputError) as err:
        TraceSource(path)
    assert fragment in str(err.value)
    for name in ("mooncake", "azure", "burstgpt", "hkv"):
        assert name in str(err.value)


BAD_LINES = [
    ("t.csv", ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\nyesterday,3,4\n"
               "2023-11-16 18:15:47,-3,4\n2023-11-16 18:15:48,3\n"),
     ["line 3: TIMESTAMP must look like 2023-11-16 18:15:46.6805900",
      "line 4: ContextTokens must be a whole number of tokens >= 0, got '-3'",
      "line 5: 2 column(s), expected 3"]),
    ("t.jsonl", ('{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n'
                 '{"timestamp": 10, "input_length": 600, "output_length": 5, "hash_ids": [0]}\n'
                 '{"timestamp": 20, "input_length": 600, "hash_ids": [0, 1]}\n'),
     ["line 2: hash_ids has 1 block ids, but input_length 600 needs ceil(600 / 512) = 2 blocks",
      "line 3: missing field(s) output_length"]),
    ("b.csv", ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
               "soon,ChatGPT,4,5,9,API log\n"),
     ["line 2: Timestamp must be a number of seconds >= 0, got 'soon'"]),
]


@pytest.mark.parametrize("name, content, fragments", BAD_LINES)
def test_malformed_lines_name_line_and_expectation(tmp_path, name, content, fragments):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InvalidInputError) as err:
        TraceSource(path)
    assert str(err.value).startswith(f"trace {path}: line ")
    for fragment in fragments:
        assert fragment in str(err.value)
