"""Compile the kernels for an sm_90 target without a GPU, to catch compiled-mode-only errors on CPU.

The interpreter accepts things the compiler rejects (tl.dot dims < 16, dtype mixes, early returns), so
the kernels are also lowered all the way to a cubin with triton's bundled ptxas. It runs in a subprocess
because this process has TRITON_INTERPRET=1 and its kernels are already interpreted.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from hkv.kernels.paged_attention import _paged_attention_kernel, _tile_sizes
from hkv.kernels.store_kv import _store_kv_kernel

TARGET = GPUTarget("cuda", 90, 32)

def compile_kernel(kernel, types, constexprs):
    names = kernel.arg_names
    signature = {n: "constexpr" if n in constexprs else types.get(n, "i32") for n in names}
    constexpr_values = {(names.index(k),): v for k, v in constexprs.items()}
    src = ASTSource(fn=kernel, signature=signature, constexprs=constexpr_values)
    compiled = triton.compile(src, target=TARGET)
    assert "cubin" in compiled.asm, sorted(compiled.asm)
    return compiled

for dtype in ("fp16", "bf16", "fp32"):
    # decode with GQA 4 / d128, and a prefill tile with every option on and an odd head_dim
    cases = ((128, 4, 1, 0, 0, False, False), (80, 2, 300, 128, 64, True, True))
    for head_dim, group, max_query_len, window, chunk, softcap, sinks in cases:
        head_dim_pad = max(16, triton.next_power_of_2(head_dim))
        block_q, block_n = _tile_sizes(max_query_len, group, head_dim_pad)
        upcast = dtype == "fp32"
        types = {n: "*" + dtype for n in ("Q", "K_cache", "V_cache", "Out", "Sinks")}
        types |= {"Block_table": "*i32", "Query_start_loc": "*i32", "Seq_lens": "*i32"}
        types |= {"scale": "fp32", "softcap": "fp32"}
        compiled = compile_kernel(_paged_attention_kernel, types, dict(
            HEAD_DIM=head_dim, HEAD_DIM_PAD=head_dim_pad,
            GROUP=group, GROUP_PAD=triton.next_power_of_2(group),
            BLOCK_Q=block_q, BLOCK_N=block_n, BLOCK_SIZE=16, SLIDING_WINDOW=window, CHUNK_SIZE=chunk,
            USE_SOFTCAP=softcap, USE_SINKS=sinks, UPCAST=upcast, DOT_PRECISION="ieee" if upcast else "tf32"))
        uses_tensor_cores = "mma" in compiled.asm["ptx"]
        assert uses_tensor_cores != upcast, (dtype, "fp16/bf16 must use tensor cores, fp32 must stay IEEE")
    types = {n: "*" + dtype for n in ("Key", "Value", "Key_cache", "Value_cache")} | {"Slot_mapping": "*i64"}
    store_constexprs = dict(NUM_KV_HEADS=8, HEAD_DIM=80, HEADS_PAD=8, HEAD_DIM_PAD=128, BLOCK_SIZE=16)
    compile_kernel(_store_kv_kernel, types, store_constexprs)
print("ok")
"""


def _has_cuda_backend() -> bool:
    spec = importlib.util.find_spec("triton")
    if spec is None or spec.origin is None:
        return False
    ptxas = os.path.join(os.path.dirname(spec.origin), "backends", "nvidia", "bin", "ptxas")
    return os.path.exists(ptxas)


@pytest.mark.skipif(
    not _has_cuda_backend(), reason="triton's NVIDIA backend (bundled ptxas) is not installed"
)
def test_kernels_compile_for_sm90() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"  # silence triton 3.9's default-change warning
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-4000:]
