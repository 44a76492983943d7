"""Max-length requests SGLang's pools hold at once (concurrency.py), worked by hand."""

from __future__ import annotations

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.concurrency import max_length_requests
from hkv.planner.engines.sglang.pool_resolution import resolve
from hkv.planner.engines.sglang.server_args import SglangServerArgs

GIB = 2**30


@pytest.mark.parametrize(("name", "args", "available", "expected"), [
    # Llama-3.1-8B, 40 GiB: 327,680 tokens // 131,072 = 2
    ("llama-3.1-8b-instruct", SglangServerArgs(), 40 * GIB, 2),
    # gpt-oss-20b, 10 GiB: full 10,737,418,240 // 44,236.8 = 242,725, swa int(194,180.0) = 194,180; a request
    # keeps min(context, 127 (SGLang's window: the model class's 128 - 1) + 128 lazily freed + 2 pages) = 257
    # sliding tokens: 194,180 // 257 = 755. context 131,072: 242,725 // 131,072 = 1; context 4,096:
    # 242,725 // 4,096 = 59 (< 755, < 4,096 running)
    ("gpt-oss-20b", SglangServerArgs(), 10 * GIB, 1),
    ("gpt-oss-20b", SglangServerArgs(context_length=4096), 10 * GIB, 59),
    # Nemotron-H-8B, 40 GiB: 1,380,874 // 8,192 = 168 full-length requests, but 39 running (state slots)
    ("nemotron-h-8b-base-8k", SglangServerArgs(), 40 * GIB, 39),
])
def test_max_length_requests(name: str, args: SglangServerArgs, available: int, expected: int) -> None:
    res = resolve(load_model_spec(name), args, available, 0.83)
    assert max_length_requests(res.pools, res.model.sliding_window) == expected
