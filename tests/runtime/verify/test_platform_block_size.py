"""`hkv verify`'s CPU translation of the block size (runtime/verify/vllm_engine_args.py).

vLLM's CPU_ATTN runs multiples of 32 tokens only (v1/attention/backends/cpu_attn.py); told 16,
vLLM 0.32 gives sliding-window layers 32-token blocks and the plan no longer matches the engine
(measured on the tiny Gemma3: 305 blocks of 32 where a plan at 16 said 610;
tests/oracle/test_verify_engine.py runs the real engine).
"""

from __future__ import annotations

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime.verify.vllm_engine_args import engine_settings, platform_plan_config

GEMMA = load_model_spec("gemma-3-27b")  # sliding + full, bf16: FLASH_ATTN's 16 on an H100
CFG = PlanConfig(gpu="h100", available_kv_memory_bytes=1 << 30, max_model_len=4096, max_num_batched_tokens=512)


def test_cpu_translation_rounds_the_gpu_block_up_to_32():
    cpu = platform_plan_config(GEMMA, CFG, "cpu")
    assert (cpu.block_size, cpu.cpu_engine) == (32, True)
    the_plan = plan(GEMMA, cpu)
    assert the_plan.block is not None and the_plan.block.backend == "CPU_ATTN"
    assert {g.block_size for g in the_plan.reports["vllm"].layout.groups} == {32}
    settings = engine_settings("/m", GEMMA.dtype_bytes, cpu, compute_memory_budget(GEMMA, cpu), 4096, "cpu")
    assert settings.llm_args["block_size"] == 32
    assert any("CPU_ATTN runs multiples of 32" in line for line in settings.translations)


def test_cuda_keeps_the_plan_config():
    assert platform_plan_config(GEMMA, CFG, "cuda") is CFG


def test_cpu_refuses_a_forced_16():
    with pytest.raises(InvalidInputError, match=r"block_size 16: vLLM's CPU_ATTN backend runs multiples of 32 only"):
        platform_plan_config(GEMMA, PlanConfig(gpu="h100", available_kv_memory_bytes=1 << 30, block_size=16), "cpu")


def test_cpu_keeps_a_given_multiple_of_32():
    cfg = PlanConfig(gpu="h100", available_kv_memory_bytes=1 << 30, block_size=128)
    assert platform_plan_config(GEMMA, cfg, "cpu").block_size == 128
