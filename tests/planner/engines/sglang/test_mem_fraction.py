"""SGLang 0.5.23's default mem_fraction_static (arg_groups/memory_hook.py), worked by hand.

reserved (MiB) = 512 + max(chunk, 2048) x 1.5 + tp x pp / 8 x 1024 + decode graph bs x 2
                 + prefill graph: 8 MiB per captured size (1,536 MiB with MLA; none for KDA, PP > 1 and
                 multimodal models outside SGLang's allow-list), at least 10,240 MiB above 60 GiB cards;
mfs = round((gpu - reserved) / gpu, 3). Prefill sizes captured up to 8,192 tokens: 4..32 step 4 (8),
48..256 step 16 (14), 288..512 step 32 (8), 576..1024 step 64 (8), 1280..4096 step 256 (12),
4608..8192 step 512 (8) = 58; up to 4,096: 50.
"""

from __future__ import annotations

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.sglang.config_extras import SglangConfigExtras
from hkv.planner.engines.sglang.mem_fraction import (
    default_mem_fraction_static,
    gpu_defaults,
    prefill_graph_sizes,
)
from hkv.planner.engines.sglang.server_args import SglangServerArgs

MIB = 2**20
H100 = 81559 * MIB  # nvidia-smi memory.total
H200 = 143771 * MIB
A100_40 = 40960 * MIB


@pytest.mark.parametrize(("max_tokens", "sizes"), [(8192, 58), (4096, 50), (2048, 42), (32, 8), (0, 0)])
def test_prefill_graph_sizes(max_tokens: int, sizes: int) -> None:
    # 2048: 8 + 14 + 8 + 8 = 38, and 1280, 1536, 1792, 2048: 42
    assert prefill_graph_sizes(max_tokens) == sizes


@pytest.mark.parametrize(("gpu", "tp", "chunk", "max_bs"), [
    (H100, 1, 8192, 256), (H100, 4, 8192, 512), (H200, 2, 8192, 256), (A100_40, 1, 4096, 32),
    (16 * 1024 * MIB, 1, 2048, 8), (24 * 1024 * MIB, 1, 4096, 48), (183359 * MIB, 1, 16384, 512),
])
def test_gpu_tiers(gpu: int, tp: int, chunk: int, max_bs: int) -> None:
    defaults = gpu_defaults(gpu, SglangServerArgs(tp_size=tp))
    assert (defaults.chunked_prefill_size, defaults.cuda_graph_max_bs) == (chunk, max_bs)


CASES = [
    # Llama-3.1-8B, H100, TP 1: 512 + 12,288 + 128 + 512 + 58 x 8 = 13,904;
    # (81,559 - 13,904) / 81,559 = 67,655 / 81,559 = 0.82952 -> 0.83
    ("llama-3.1-8b-instruct", H100, SglangServerArgs(), 0.83),
    # H200: (143,771 - 13,904) / 143,771 = 129,867 / 143,771 = 0.90329 -> 0.903
    ("llama-3.1-8b-instruct", H200, SglangServerArgs(), 0.903),
    # TP 8 on H200: 512 + 12,288 + 1,024 + 512 x 2 + 464 = 15,312; 128,459 / 143,771 = 0.893497 -> 0.893
    # (143,771 x 0.8935 = 128,459.39, just above 128,459)
    ("llama-3.1-8b-instruct", H200, SglangServerArgs(tp_size=8), 0.893),
    # A100 40GB: 512 + 6,144 + 128 + 64 + 50 x 8 = 7,248 (no 10 GiB floor under 60 GiB);
    # 33,712 / 40,960 = 0.82305 -> 0.823
    ("llama-3.1-8b-instruct", A100_40, SglangServerArgs(), 0.823),
    # --max-running-requests 16 lowers the default graph batch to 16: 12,928 + 32 + 464 = 13,424;
    # 68,135 / 81,559 = 0.83541 -> 0.835
    ("llama-3.1-8b-instruct", H100, SglangServerArgs(max_running_requests=16), 0.835),
    # DeepSeek-V3 (MLA): prefill capture 1,536 MiB: 13,440 + 1,536 = 14,976; 66,583 / 81,559 = 0.81638 -> 0.816
    ("deepseek-v3", H100, SglangServerArgs(), 0.816),
    # Kimi-Linear (KDA: no prefill capture): 13,440; 68,119 / 81,559 = 0.83521 -> 0.835
    ("kimi-linear-48b-a3b-instruct", H100, SglangServerArgs(), 0.835),
    # PP 2: 512 + 12,288 + 256 + 512 (no prefill capture) = 13,568; 67,991 / 81,559 = 0.83364 -> 0.834
    ("llama-3.1-8b-instruct", H100, SglangServerArgs(pp_size=2), 0.834),
]


@pytest.mark.parametrize(("name", "gpu", "args", "expected"), CASES)
def test_default_mem_fraction_static(name: str, gpu: int, args: SglangServerArgs, expected: float) -> None:
    assert default_mem_fraction_static(gpu, args, load_model_spec(name)) == expected


def test_vision_tower_lowers_the_fraction() -> None:
    # Qwen3.5 keeps the prefill graph: 0.83 on H100, then x 0.95 x (1 - 0.1 x (complexity - 1)).
    # Without a vision_config (the catalog copy) transformers' default tower: 24 layers (SGLang reads
    # num_hidden_layers, Qwen's tower says `depth`), hidden 1152: 24 x 1152^2 / (24 x 1024^2) = 1.265625,
    # 0.83 x 0.95 x 0.9734375 = 0.76755546875
    spec = load_model_spec("qwen3.5-27b")
    assert default_mem_fraction_static(H100, SglangServerArgs(), spec) == pytest.approx(0.76755546875, abs=1e-12)
    # a 27-layer tower: 27 x 1152^2 / (24 x 1024^2) = 1.423828125; 0.83 x 0.95 x 0.9576171875 = 0.75508115234375
    extras = SglangConfigExtras(vision_tower=(27, 1152))
    assert default_mem_fraction_static(H100, SglangServerArgs(), spec, extras) == pytest.approx(0.75508115234375,
                                                                                               abs=1e-12)


def test_multimodal_off_by_default_keeps_the_fraction() -> None:
    # Gemma 3 and Llama 4 are served as language models unless --enable-multimodal: no cut, and the
    # prefill graph stays: 0.83 on H100 like a dense model
    extras = SglangConfigExtras(vision_tower=(27, 1152))
    assert default_mem_fraction_static(H100, SglangServerArgs(), load_model_spec("gemma-3-27b-it"), extras) == 0.83
    assert default_mem_fraction_static(H100, SglangServerArgs(), load_model_spec("llama-4-scout-17b-16e-instruct")) == 0.83
