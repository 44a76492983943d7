"""TraceSource: Mooncake block sharing without token lists, streaming, the part replayed, and
requests too long for max_model_len."""

import gc
import json
import weakref
from pathlib import Path

import pytest
from hkv.planner.errors import InvalidInputError
from hkv.runtime.simulation.traces.trace_options import TraceOptions
from hkv.runtime.simulation.traces.trace_source import TraceSource
from hkv.runtime.simulation.traces.trace_window import TraceWindow

DATA = Path(__file__).parents[3] / "data" / "traces"
MOONCAKE = DATA / "mooncake_conversation_excerpt.jsonl"


def shared_len(a, b) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_mooncake_requests_share_exactly_their_shared_blocks():
    requests = list(TraceSource(MOONCAKE))
    line1, line2, line41 = requests[0], requests[1], requests[40]
    # Line 2 (hash ids 0, 14..27) and line 41 (0, 14..26, 3868, 3869) share 14 blocks of 512 tokens.
    assert shared_len(line2.prompt_token_ids, line41.prompt_token_ids) == 14 * 512
    # Every line starts with hash id 0, then differs: lines 1 and 2 share one block.
    assert shared_len(line1.prompt_token_ids, line2.prompt_token_ids) == 512
    # The last block is cut to input_length (7322 = 14 x 512 + 154); outputs share nothing.
    assert line2.prompt_len == 7322 and line41.prompt_len == 7833
    outputs = [set(r.output_token_ids) for r in requests]
    prompts = set().union(*(r.prompt_token_ids for r in requests))
    assert sum(map(len, outputs)) == len(set().union(*outputs)) and not prompts & set().union(*outputs)


def test_every_iteration_yields_the_same_requests():
    source = TraceSource(MOONCAKE)
    first, second = list(source), list(source)
    assert first == second and len(first) == 41
    assert [p for p, _ in source.lengths()] == [r.prompt_len for r in first]


def test_iteration_is_lazy_and_holds_no_token_arrays(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = MOONCAKE.read_text().splitlines()
    path.write_text("\n".join(lines) + "\n")
    source = TraceSource(path)
    # Break line 30 after the first pass: pulling the first 20 requests does not read that far.
    lines[29] = "{broken"
    path.write_text("\n".join(lines) + "\n")
    alive = []
    for request in source:  # (not enumerate: its reused result tuple would keep the last request)
        alive.append(weakref.ref(request.prompt_token_ids))
        del request
        gc.collect()
        assert sum(ref() is not None for ref in alive) == 0  # the source keeps no array it yielded
        if len(alive) == 20:
            break
    with pytest.raises(InvalidInputError, match="line 30 changed since the trace was read"):
        list(source)


def _mooncake_line(timestamp_ms, input_length, output_length=4):
    return json.dumps({"timestamp": timestamp_ms, "input_length": input_length, "output_length": output_length,
                       "hash_ids": list(range(-(-input_length // 512)))})


def test_limit_window_and_too_long(tmp_path):
    path = tmp_path / "t.jsonl"
    # arrivals 100, 101, ..., 109 s; line 4 (at 3 s after the first) is 5,000 tokens long
    path.write_text("\n".join(_mooncake_line(100_000 + 1000 * i, 5000 if i == 3 else 600) for i in range(10)))

    def replay(window, max_model_len=None):
        source = TraceSource(path, TraceOptions(window=window, max_model_len=max_model_len))
        return [(r.request_id, r.arrival_s) for r in source], source.summary

    got, summary = replay(TraceWindow(limit=3))
    assert got == [("line-1", 0.0), ("line-2", 1.0), ("line-3", 2.0)]
    got, summary = replay(TraceWindow(2.0, 5.0))  # [2, 5) s after the first, arriving 2 s earlier
    assert got == [("line-3", 0.0), ("line-4", 1.0), ("line-5", 2.0)] and summary.num_before_window == 2
    got, summary = replay(TraceWindow(2.0, None, limit=2), max_model_len=4096)
    assert got == [("line-3", 0.0), ("line-5", 2.0)]  # line 4 skipped: 5,000 + 1 > 4,096
    t = summary.too_long
    assert (t.num_skipped, t.first_request_id, t.first_prompt_len) == (1, "line-4", 5000)
    assert summary.num_requests == 2 and summary.num_rows_read == 5


@pytest.mark.parametrize("window, max_model_len, fragment", [
    (TraceWindow(20.0), None, "no request arrives in trace_window 20: (the requests read arrive from 0 to 9.0 s"),
    (TraceWindow(), 500, "all 10 request(s) exceed max_model_len 500 (first: line-1, 600 prompt tokens)"),
])
def test_nothing_left_to_replay_says_why(tmp_path, window, max_model_len, fragment):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(_mooncake_line(1000 * i, 600) for i in range(10)))
    with pytest.raises(InvalidInputError) as err:
        TraceSource(path, TraceOptions(window=window, max_model_len=max_model_len))
    assert fragment in str(err.value)


def test_a_file_out_of_time_order_is_sorted_in_memory(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(_mooncake_line(ms, 600) for ms in (2000, 0, 1000)))
    source = TraceSource(path)
    assert source.summary.sorted_in_memory
    assert [(r.request_id, r.arrival_s) for r in source] == [("line-2", 0.0), ("line-3", 1.0), ("line-1", 2.0)]


def test_session_turns_outside_the_window_are_resent_but_not_waited_for(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in (
        {"arrival": 0, "prompt_len": 10, "output_len": 2, "session": "s"},
        {"arrival": 5, "prompt_len": 3, "output_len": 2, "session": "s"},
        {"arrival": 6, "prompt_len": 4, "output_len": 1, "session": "s"})))
    requests = list(TraceSource(path, TraceOptions(window=TraceWindow(4.0))))
    # turn 2 resends turn 1 (10 + 2) before its own 3 tokens, and depends on nothing replayed
    assert [(r.prompt_len, r.depends_on) for r in requests] == [(15, None), (15 + 2 + 4, 0)]


@pytest.mark.parametrize("window, limit, fragment", [
    ("10", None, "trace_window must be START:END in seconds"),
    ("5:2", None, "trace_window needs 0 <= START < END, got '5:2'"),
    (None, 0, "trace_limit must be a number of requests >= 1"),
])
def test_bad_window_or_limit(window, limit, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        TraceWindow.parse(window, limit)
