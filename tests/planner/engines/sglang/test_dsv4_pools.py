"""DeepSeek-V4-Flash through SGLang 0.5.23's DSV4PoolConfigurator, worked by hand from its formulas
(model_executor/pool_configurator.py, kernels/ops/attention/dsv4/kv_layout.py) and the catalog
config: 43 layers, compress_ratios [0, 0] + [4, 128] x 20 + [4] -> 21 c4 layers, 20 c128 layers,
2 window-only; head_dim 512 (448 nope + 64 rope), index_head_dim 128, sliding_window 128.
SGLang's overrides on CUDA: page 256, swa_full_tokens_ratio 0.1, max_running_requests 256, FP8 KV.

V4 page of p slots: ceil(584 p / 576) x 576 B:
  p 256 (sliding):    149,504 -> 260 x 576 = 149,760 B = 585.0 B a slot
  p 64 (c4, 256/4):    37,376 ->  65 x 576 =  37,440 B = 585.0 B a slot
  p 2 (c128, 256/128):  1,168 ->   3 x 576 =   1,728 B = 864.0 B a slot
Per sliding token: 585 x 43 = 25,155 plus the c4 compressor states riding on it, a ring of 8 rows per
  256-token page: 8/256 x (2 x 2 x 512 x 4 + 2 x 2 x 128 x 4) x 21 = 0.03125 x 10,240 x 21 = 6,720
  -> 31,875 B.
Per full token: 0.1 x 31,875 = 3,187.5; c4: (585 / 4 + 132 / 4) x 21 = 179.25 x 21 = 3,764.25
  (132 = an fp8 index key of 128 + one 4-byte scale); c128: 864 / 128 x 20 = 135 -> 7,086.75 B
  (SGLang logs "bytes_per_full_token=7086.75").
c128 state bias at 256 requests: (257 x 128 + 128 + 1) = 33,025 rows, padded to 128: 33,152 rows,
  x 2 x 512 x 4 B x 20 layers = 33,152 x 81,920 = 2,715,811,840 B (SGLang logs "2.53 GB").
"""

from __future__ import annotations

import pytest
from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.dsv4_model import dsv4_model
from hkv.planner.engines.sglang.dsv4_pools import v4_page_bytes
from hkv.planner.engines.sglang.mem_fraction import default_mem_fraction_static
from hkv.planner.engines.sglang.pool_resolution import resolve
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.engines.sglang.startup_lines import start_up_lines
from hkv.planner.errors import DoesNotFitError, InvalidInputError

MIB = 1 << 20
H100_SMI_BYTES = 81_559 * MIB
REST_H100_55 = 33_014_095_544  # the rest SGLang's own code profiled on an H100 with 55 % free after the weights
MFS = 0.835


@pytest.fixture(scope="module")
def spec() -> ModelSpec:
    return load_model_spec("deepseek-v4-flash")


def test_model_read_from_the_spec(spec: ModelSpec) -> None:
    model = dsv4_model(spec)
    assert (model.num_layers, model.layers_of(4), model.layers_of(128), model.layers_of(0)) == (43, 21, 20, 2)
    assert (model.sliding_window, model.head_dim, model.index_head_dim, model.context_len) == (128, 512, 128, 1_048_576)


@pytest.mark.parametrize(("slots", "page_bytes"), [(256, 149_760), (64, 37_440), (2, 1_728)])
def test_v4_page_bytes(slots: int, page_bytes: int) -> None:
    assert v4_page_bytes(slots) == page_bytes


def test_coefficient_and_bias(spec: ModelSpec) -> None:
    dsv4 = resolve(spec, SglangServerArgs(), REST_H100_55, MFS).dsv4
    assert dsv4 is not None
    assert dsv4.sizer.bytes_per_swa_token == 31_875.0
    assert dsv4.sizer.bytes_per_full_token == 7_086.75
    assert dsv4.sizer.c128_state_fixed_bytes == 2_715_811_840


def test_pools_at_sglangs_own_rest(spec: ModelSpec) -> None:
    # (33,014,095,544 - 2,715,811,840) / 7,086.75 = 30,298,283,704 / 7,086.75 = 4,275,342.5 -> 4,275,342,
    # page-floored: 16,700 x 256 = 4,275,200; sliding int(427,520.0) = 1,670 x 256 = 427,520;
    # c4 4,275,200 // 4 = 1,068,800; c128 // 128 = 33,400; c4 states 1,670 pages x 8 = 13,360;
    # c128 states (256 + 1) x 128 = 32,896; running min(256, 4,275,200 // 2) = 256.
    res = resolve(spec, SglangServerArgs(), REST_H100_55, MFS)
    assert res.pools.to_json() == {
        "mem_fraction_static": MFS, "available_bytes": REST_H100_55, "max_total_num_tokens": 4_275_200,
        "swa_tokens": 427_520, "max_mamba_cache_size": None, "max_running_requests": 256,
        "context_len": 1_048_576, "page_size": 256}
    assert res.dsv4 is not None
    sizes = res.dsv4.sizes
    assert (sizes.c4, sizes.c128, sizes.c4_state, res.dsv4.c128_state) == (1_068_800, 33_400, 13_360, 32_896)


def test_start_up_lines_are_sglangs(spec: ModelSpec) -> None:
    # The first three: as SGLang 0.5.23's own DSV4PoolConfigurator printed them for this rest (oracle
    # harness, logging at INFO). The pool's line: c4_logical_size = c128 x 32 = 1,068,800.
    lines = start_up_lines(resolve(spec, SglangServerArgs(), REST_H100_55, MFS), 8192)
    assert lines == (
        "DSV4 SWA sizing: mode=ratio (explicit), swa_tokens=427520, swa_full_tokens_ratio=0.1",
        ("DSV4 memory calculation: unified=False, unified_fp8=False, dspark_draft_bf16=False, "
        "bytes_per_full_token=7086.75, available_bytes=30.75 GB, c128_state_fixed=2.53 GB, c2_state_fixed=0.00 GB, "
        "swa_fixed=0.00 GB, swa_ring_fixed=0.00 GB, c4_state_fixed=0.00 GB, full_token=4275200"),
        "DSV4 pool sizes: full=4275200, swa=427520, c4=1068800, c128=33400, c4_state=13360, c128_state=0",
        ("Initialize DeepSeekV4TokenToKVPool with max_num_reqs=256 swa_size=427520 c4_size=1068800 "
        "c4_logical_size=1068800 c128_size=33400 c4_state_pool_size=13360 c128_state_pool_size=32896 "
        "unified=False unified_fp8=False"),
        ("max_total_num_tokens=4275200, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=256, context_len=1048576"),
    )


def test_max_total_tokens_resizes_without_the_bias(spec: ModelSpec) -> None:
    # 100,000 -> 390 pages = 99,840; sliding int(9,984.0) = 39 x 256 = 9,984; c4 24,960; c128 780;
    # c4 states 39 x 8 = 312 (SGLang printed these for the same case); both sizing lines printed twice.
    res = resolve(spec, SglangServerArgs(max_total_tokens=100_000), REST_H100_55, MFS)
    assert (res.pools.max_total_num_tokens, res.pools.swa_tokens) == (99_840, 9_984)
    lines = start_up_lines(res, 8192)
    assert lines[3] == "DSV4 SWA sizing: mode=ratio (explicit), swa_tokens=9984, swa_full_tokens_ratio=0.1"
    assert lines[4] == "DSV4 pool sizes: full=99840, swa=9984, c4=24960, c128=780, c4_state=312, c128_state=0"


def test_requested_running_requests_set_the_bias(spec: ModelSpec) -> None:
    # 64 requests: (65 x 128 + 129) = 8,449 rows -> 8,576 x 81,920 = 702,545,920 B (SGLang: "0.65 GB").
    # SGLang's rest at mfs 0.84 (its graph batch drops to 64): 33,439,015,239 - 702,545,920 = 32,736,469,319;
    # / 7,086.75 = 4,619,391.x -> 18,044 pages = 4,619,264; sliding int(461,926.4) -> 1,804 pages = 461,824.
    res = resolve(spec, SglangServerArgs(max_running_requests=64), 33_439_015_239, 0.84)
    assert res.dsv4 is not None and res.dsv4.sizer.c128_state_fixed_bytes == 702_545_920
    assert (res.pools.max_total_num_tokens, res.pools.swa_tokens, res.pools.max_running_requests) == (
        4_619_264, 461_824, 64)


def test_a_given_ratio_replaces_the_override(spec: ModelSpec) -> None:
    # 0.5 x 31,875 + 3,764.25 + 135 = 19,836.75 B a full token (SGLang logs 19836.75);
    # 30,298,283,704 / 19,836.75 = 1,527,381.x -> 5,966 pages = 1,527,296; sliding 763,648 = 2,983 pages.
    res = resolve(spec, SglangServerArgs(swa_full_tokens_ratio=0.5), REST_H100_55, MFS)
    assert (res.pools.max_total_num_tokens, res.pools.swa_tokens) == (1_527_296, 763_648)


def test_an_explicit_0_8_is_not_read_as_the_default(spec: ModelSpec) -> None:
    # 0.8 x 31,875 + 3,764.25 + 135 = 29,399.25 B a full token;
    # 30,298,283,704 / 29,399.25 = 1,030,580.2 -> 4,025 pages of 256 = 1,030,400; sliding 0.8 x 1,030,400
    # = 824,320 = 3,220 pages.
    res = resolve(spec, SglangServerArgs(swa_full_tokens_ratio=0.8), REST_H100_55, MFS)
    assert res.dsv4 is not None and res.dsv4.sizer.swa_ratio == 0.8
    assert (res.pools.max_total_num_tokens, res.pools.swa_tokens) == (1_030_400, 824_320)


@pytest.mark.parametrize("args", [SglangServerArgs(page_size=64), SglangServerArgs(kv_cache_dtype="bfloat16"),
                                  SglangServerArgs(disable_radix_cache=True)])
def test_arguments_that_change_nothing(spec: ModelSpec, args: SglangServerArgs) -> None:
    # The override pins page 256; the V4 layout's bytes do not follow the KV dtype; ratio mode ignores the radix cache.
    pools = resolve(spec, args, REST_H100_55, MFS).pools
    assert (pools.max_total_num_tokens, pools.swa_tokens, pools.page_size) == (4_275_200, 427_520, 256)


def test_mem_fraction_static_without_the_prefill_graph(spec: ModelSpec) -> None:
    # 512 + 8,192 x 1.5 + 1 x 1,024 / 8 + 256 x 2 = 13,440 MiB (SGLang disables DeepSeek-V4's prefill graph);
    # (81,559 - 13,440) / 81,559 = 0.8352 -> 0.835. TP 4: 512 + 12,288 + 512 + 512 x 2 = 14,336 -> 0.824.
    assert default_mem_fraction_static(H100_SMI_BYTES, SglangServerArgs(), spec) == 0.835
    assert default_mem_fraction_static(H100_SMI_BYTES, SglangServerArgs(tp_size=4), spec) == 0.824


def test_too_many_requests_leave_no_sliding_pool(spec: ModelSpec) -> None:
    # 5,000 requests: 5,001 x 128 + 129 = 640,257 rows -> 640,384 x 81,920 = 52,460,257,280 B, above the
    # 33 GB rest: no token, a sliding pool of 0 <= 128 + 256 (SGLang: "SWA pool (0 tokens) cannot hold ...").
    with pytest.raises(DoesNotFitError, match="sliding pool"):
        resolve(spec, SglangServerArgs(max_running_requests=5000), REST_H100_55, MFS)


@pytest.mark.parametrize(("args", "field"), [
    (SglangServerArgs(kv_cache_dtype="fp8_e5m2"), "kv_cache_dtype"),
    (SglangServerArgs(version="0.5.22"), "sglang_version"),
    (SglangServerArgs(speculative_algorithm="NGRAM"), "speculative_algorithm"),
])
def test_refusals(spec: ModelSpec, args: SglangServerArgs, field: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        resolve(spec, args, REST_H100_55, MFS)
    assert field in err.value.fields
