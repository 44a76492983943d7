"""SGLang's --kv-cache-dtype auto on checkpoints that calibrate an FP8 KV cache (checkpoint_kv_dtype.py;
SGLang 0.5.23 srt/mem_cache/kv_cache_dtype.py configure_kv_cache_dtype)."""

import pytest
from hkv.planner.engines.sglang.checkpoint_kv_dtype import resolve_auto_kv_cache_dtype

FP8_SCHEME = {"dynamic": False, "num_bits": 8, "type": "float"}
# nvidia/Gemma-4-26B-A4B-NVFP4's config.json (records g001-g003: SGLang ran fp8_e4m3 on it)
GEMMA4_NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_scheme": FP8_SCHEME}
CT_STATIC = {"quant_method": "compressed-tensors",
             "kv_cache_scheme": {**FP8_SCHEME, "strategy": "tensor", "symmetric": True}}


@pytest.mark.parametrize("given, quant, ct_kv, expected", [
    ("auto", GEMMA4_NVFP4, True, "fp8_e4m3"),
    ("auto", {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}, True, "fp8_e4m3"),
    ("auto", {"quant_method": "modelopt", "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}},
     True, "fp8_e4m3"),  # hf_quant_config.json's nested layout
    ("auto", {"producer": {"name": "modelopt"}, "quantization": {"kv_cache_quant_algo": "fp8"}}, True, "fp8_e4m3"),
    ("auto", {"quant_method": "modelopt_fp4", "quant_algo": "NVFP4", "kv_cache_scheme": "FP8"}, True, "fp8_e4m3"),
    ("auto", {"quant_method": "fp8", "kv_cache_quant_algo": "FP8"}, True, "fp8_e4m3"),
    ("auto", CT_STATIC, True, "fp8_e4m3"),
    ("auto", CT_STATIC, False, "auto"),  # before 0.5.19 compressed-tensors reports no kv_cache_quant_algo
    ("auto", {**CT_STATIC, "kv_cache_scheme": {**CT_STATIC["kv_cache_scheme"], "dynamic": True}}, True, "auto"),
    ("auto", {"quant_method": "modelopt", "quant_algo": "NVFP4",
              "kv_cache_scheme": {"type": "float", "num_bits": 4}}, True, "auto"),  # NVFP4 KV: not from auto
    ("auto", {"quant_method": "modelopt", "quant_algo": "NVFP4"}, True, "auto"),
    ("auto", {"quant_method": "awq", "kv_cache_quant_algo": "FP8"}, True, "auto"),
    ("auto", None, True, "auto"),
    ("bfloat16", GEMMA4_NVFP4, True, "bfloat16"),  # an explicit dtype wins
])
def test_auto_follows_the_checkpoint(given, quant, ct_kv, expected):
    assert resolve_auto_kv_cache_dtype(given, quant, compressed_tensors_kv=ct_kv) == expected
