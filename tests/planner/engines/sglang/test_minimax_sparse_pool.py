"""MiniMax-M3's MiniMaxSparseKVPool in SGLang 0.5.23: page size by card, pools and start-up lines,
worked by hand from the catalog config (60 layers, 4 KV heads x 128, 57 sparse layers with a K-only
index key of 128, bf16).

Cell (pool_configurator.py, is_minimax_sparse branch): K/V 60 x 2 x 4 x 128 x 2 B = 122,880 B plus
index keys 57 x 128 x 2 B = 14,592 B = 137,472 B a token; FP8 E4M3 KV on Hopper stores both in one
byte: 61,440 + 7,296 = 68,736 B. TP 8: one KV head a rank, the index head unsplit: 30,720 + 14,592 = 45,312 B.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.config_extras import SglangConfigExtras
from hkv.planner.engines.sglang.minimax_sparse_pool import (
    index_pool_lines,
    index_value_layers,
    minimax_sparse_page_size,
)
from hkv.planner.engines.sglang.pool_resolution import resolve
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.engines.sglang.startup_lines import start_up_lines

REST_BYTES = 53_327_649_833  # an H100 rest SGLang's own code profiled for MiniMax-M3 (80 % free)
MFS = 0.83
CATALOG = Path(__file__).resolve().parents[4] / "model_specs" / "catalog" / "minimax-m3.json"


@pytest.mark.parametrize(("capability", "page"), [((9, 0), 128), ((10, 0), 128), ((10, 3), 128),
                                                   ((8, 0), 1), ((8, 9), 1), ((12, 0), 1)])
def test_page_size_by_card(capability: tuple[int, int], page: int) -> None:
    # Hopper: fa3 at page 128; SM100: fa4 / trtllm_mha at 128; A100, L40S, RTX Blackwell: no override, 1.
    assert minimax_sparse_page_size(capability) == page


@pytest.mark.parametrize(("args", "capability", "tokens", "page"), [
    # 53,327,649,833 / 137,472 = 387,916.4 -> 387,916, page-floored to 3,030 x 128 = 387,840
    (SglangServerArgs(), (9, 0), 387_840, 128),
    # A100: page 1, no flooring
    (SglangServerArgs(), (8, 0), 387_916, 1),
    # a given --page-size wins over the override
    (SglangServerArgs(page_size=1), (9, 0), 387_916, 1),
    # FP8 E4M3 on Hopper: 53,327,649,833 // 68,736 = 775,832 -> 6,061 x 128 = 775,808
    (SglangServerArgs(kv_cache_dtype="fp8_e4m3"), (9, 0), 775_808, 128),
    # TP 8 (rest of SGLang's own TP-8 H100 case): 30,954,606,526 // 45,312 = 683,143 -> 5,337 x 128 = 683,136
    (SglangServerArgs(tp_size=8), (9, 0), 683_136, 128),
])
def test_pools(args: SglangServerArgs, capability: tuple[int, int], tokens: int, page: int) -> None:
    rest = 30_954_606_526 if args.tp_size == 8 else REST_BYTES
    pools = resolve(load_model_spec("minimax-m3"), args, rest, MFS, compute_capability=capability).pools
    assert (pools.max_total_num_tokens, pools.page_size, pools.swa_tokens, pools.max_mamba_cache_size) == (
        tokens, page, None, None)


def test_start_up_lines_name_the_index_pool() -> None:
    # 387,840 tokens + one page = 387,968 rows. Main pool: 4 heads x 60 layers x 387,968 x 128 x 2 B =
    # 23,836,753,920 B = 22.20 GiB for K and for V; index keys: 57 x 387,968 x 128 x 2 B = 5,661,229,056 B = 5.27 GiB.
    res = resolve(load_model_spec("minimax-m3"), SglangServerArgs(), REST_BYTES, MFS, compute_capability=(9, 0))
    lines = start_up_lines(res, 8192)
    assert lines == (
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 387840, K size: 22.20 GB, V size: 22.20 GB",
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 387840, K size: 5.27 GB, V size: 0.00 GB",
        ("max_total_num_tokens=387840, chunked_prefill_size=8192, max_prefill_tokens=16384, "
         "max_running_requests=2048, context_len=524288"),
    )


def test_index_pool_line_fp8() -> None:
    # FP8 E4M3 on Hopper, 775,808 tokens: 57 x 775,936 rows x 128 x 1 B = 5,661,229,056 B = 5.27 GiB
    assert index_pool_lines(775_808, 128, 57, 0, 128, 1) == [(
        "KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 775808, K size: 5.27 GB, V size: 0.00 GB")]


def _catalog_config() -> dict[str, Any]:
    return {k: v for k, v in json.loads(CATALOG.read_text()).items() if not k.startswith("_")}


def _without_disable_list() -> dict[str, Any]:
    config = copy.deepcopy(_catalog_config())
    del config["text_config"]["sparse_attention_config"]["sparse_disable_index_value"]
    return config


def _even_layers_keep_value() -> dict[str, Any]:
    config = copy.deepcopy(_catalog_config())
    sparse = config["text_config"]["sparse_attention_config"]
    sparse["sparse_disable_index_value"] = [1 if i % 2 else 0 for i in range(60)]
    return config


@pytest.mark.parametrize(("config", "layers"), [
    (_catalog_config(), 0),  # the published M3: every sparse layer disables its index value
    (_without_disable_list(), 57),  # no list: SGLang disables none of the 57 sparse layers (3..59)
    (_even_layers_keep_value(), 28),  # flag 0 on even layers: 4, 6, ..., 58 of the sparse 3..59
    ({"model_type": "llama"}, 0),  # no sparse_attention_config at all
])
def test_index_value_layers(config: dict[str, Any], layers: int) -> None:
    assert index_value_layers(config) == layers


def test_index_values_double_the_index_cell() -> None:
    # No disable list: 57 sparse layers x (key + value) x 128 x 2 B = 29,184 B; cell 122,880 + 29,184 = 152,064 B
    # (SGLang's own code sized this config with the same cell). 53,327,649,833 // 152,064 = 350,692 -> page-floored
    # 2,739 x 128 = 350,592; rows 350,720. Main pool 4 x 60 x 350,720 x 128 x 2 B = 20.07 GiB for K and for V; index
    # keys and values 57 x 350,720 x 128 x 2 B = 4.77 GiB each.
    config = _without_disable_list()
    res = resolve(from_hf_config(config, "minimax-m3-index-values"), SglangServerArgs(), REST_BYTES, MFS,
                  extras=SglangConfigExtras.from_hf_config(config), compute_capability=(9, 0))
    assert res.cell.full == 152_064
    assert res.pools.max_total_num_tokens == 350_592
    assert start_up_lines(res, 8192)[:2] == (
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 350592, K size: 20.07 GB, V size: 20.07 GB",
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 350592, K size: 4.77 GB, V size: 4.77 GB",
    )
