"""Partitioned pools and user-input validation (sizes, expected average length)."""

import pytest
from toy_models import gemma3_27b

from hkv.planner.errors import InvalidInputError
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.plan import build_layout
from hkv.planner.plan_config import (
    EXPECTED_AVG_ENV, PlanConfig, expected_avg_seq_len_from_env, parse_positive_int,
)
from hkv.planner.sizes import parse_size

GIB = 2**30


@pytest.mark.parametrize("text, expected", [
    ("80GiB", 80 * 2**30), ("512MiB", 512 * 2**20), ("1.5GB", 1_500_000_000), ("123456", 123456),
    ("2g", 2 * 2**30), ("64 KiB", 65536), ("1TB", 10**12),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "-1GiB", "0", "1.5XB", "GiB", "1e9"])
def test_parse_size_rejects(text):
    with pytest.raises(InvalidInputError, match="--gpu-memory"):
        parse_size(text, option="--gpu-memory")


@pytest.mark.parametrize("value", ["abc", "0", "-3", "1.5", "", " "])
def test_expected_avg_env_rejects_non_positive_integers(value):
    with pytest.raises(InvalidInputError, match=EXPECTED_AVG_ENV):
        expected_avg_seq_len_from_env({EXPECTED_AVG_ENV: value})


def test_expected_avg_env_accepts_and_unset():
    assert expected_avg_seq_len_from_env({EXPECTED_AVG_ENV: "4096"}) == 4096
    assert expected_avg_seq_len_from_env({}) is None
    with pytest.raises(InvalidInputError, match="--expected-avg-seq-len"):
        parse_positive_int("1.5", name="--expected-avg-seq-len")


def test_partitioned_split_follows_expected_length():
    model = gemma3_27b()

    def partitioned(**kw):
        cfg = PlanConfig(available_kv_memory_bytes=20 * GIB, max_num_batched_tokens=8192, **kw)
        return build_layout("partitioned", model, cfg, compute_memory_budget(model, cfg))

    at_max = partitioned()
    assert [(p.kind, p.num_slots) for p in at_max.pools] == [("global", 10), ("local", 52)]
    # global pool: 8192 blocks of 10 pages per request; local: 1089 blocks of 52 pages per request.
    # By hand, pages of 131,072 B, budget 20 GiB = 21,474,836,480 B, L = 131,072, T = 16,384:
    #   global block 10 x 131,072 = 1,310,720 B, per request 8,192 x that = 10,737,418,240 B;
    #   local block 52 x 131,072 = 6,815,744 B, per request 1,089 x that = 7,422,345,216 B;
    #   n = (21,474,836,480 - 1,310,720 - 6,815,744) // 18,159,763,456 = 1 (1.18);
    #   each pool: n requests + its null block: 8,193 and 1,090 blocks; the leftover
    #   21,474,836,480 - 8,193 x 1,310,720 - 1,090 x 6,815,744 = 3,306,946,560 B is split in
    #   proportion to the per-request bytes: global 3,306,946,560 x 10,737,418,240 / 18,159,763,456
    #   = 1,955,315,574 B more, (10,738,728,960 + 1,955,315,574) / 1,310,720 = 9,684.8 -> 9,684
    #   blocks; local likewise 1,288.3 -> 1,288 blocks.
    assert [p.num_blocks for p in at_max.pools] == [9_684, 1_288]
    n_global = (at_max.pools[0].num_blocks - 1) // 8192  # 9,683 // 8,192 = 1
    n_local = (at_max.pools[1].num_blocks - 1) // 1089  # 1,287 // 1,089 = 1
    assert min(n_global, n_local) == at_max.max_num_requests(131072) == 1
    short = partitioned(expected_avg_seq_len=2048)
    assert short.pools[1].num_blocks > at_max.pools[1].num_blocks
    assert short.max_num_requests(2048) > at_max.max_num_requests(2048)


@pytest.mark.parametrize("kwargs, match", [
    ({"tp": 0}, "^tp must be"), ({"block_size": -16}, "^block_size must be"),
    ({"gpu_memory_utilization": 1.5}, "^gpu_memory_utilization must be"),
    ({"kv_cache_dtype": "int4"}, "^kv_cache_dtype must be"),
    ({"primary_layout": "jenga"}, "^primary_layout must be"),
    ({"vllm_log": "old"}, "^vllm_log must be"), ({"dtype": "float64"}, "^dtype must be"),
])
def test_plan_config_rejects(kwargs, match):
    # the library names its own fields (the CLI shows its flags for them)
    with pytest.raises(InvalidInputError, match=match) as err:
        PlanConfig(**kwargs)
    assert err.value.fields == (match[1:].split()[0],)
