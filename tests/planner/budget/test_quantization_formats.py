"""Bytes of one small linear per quantization format, each worked out by hand in the comments.

The linear: K = 256 inputs, N = 512 outputs (K x N = 131,072 weights), bf16 model (2 bytes).
"""

from __future__ import annotations

import pytest
from hkv.model_specs.param_breakdown import LinearWeight
from hkv.planner.budget.quantization.auto_round import AutoRound
from hkv.planner.budget.quantization.awq import Awq
from hkv.planner.budget.quantization.base import QuantContext
from hkv.planner.budget.quantization.bitsandbytes import IN_FLIGHT_BNB, BitsAndBytes
from hkv.planner.budget.quantization.compressed_tensors import CompressedTensors
from hkv.planner.budget.quantization.dispatch import quant_format
from hkv.planner.budget.quantization.fp8 import ONLINE_FP8, Fp8
from hkv.planner.budget.quantization.gptq import Gptq
from hkv.planner.budget.quantization.modelopt import ModelOpt
from hkv.planner.budget.quantization.mxfp4 import Mxfp4
from hkv.planner.errors import InvalidInputError

K, N = 256, 512
LIN = LinearWeight("model.layers.0.mlp.up_proj", K, N)
HOPPER = QuantContext(2, (9, 0))
AMPERE = QuantContext(2, (8, 0))
BLACKWELL = QuantContext(2, (10, 0))
TURING = QuantContext(2, (7, 5))


def _bytes(fmt, weight=LIN, ctx=HOPPER, k=K, n=N) -> int:
    return fmt.linear_bytes(weight, k, n, ctx)


def test_awq_4bit_group_128() -> None:
    # qweight 256 x 512 x 4 / 8 = 65,536; 2 groups: scales 2 x 512 x 2 = 2,048; qzeros 2 x 512 x 4 / 8 = 512
    fmt = Awq.from_config({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True})
    assert _bytes(fmt) == 65_536 + 2_048 + 512


def test_awq_skipped_module_and_lm_head_stay_bf16() -> None:
    fmt = Awq.from_config({"bits": 4, "group_size": 128, "modules_to_not_convert": ["mlp"]})
    assert _bytes(fmt) == 256 * 512 * 2  # 262,144
    head = LinearWeight("lm_head", K, N, role="lm_head")
    assert _bytes(Awq.from_config({"bits": 4, "group_size": 128}), head) == 262_144


def test_gptq_sym_on_marlin_drops_zero_points() -> None:
    # 65,536 packed + scales 2 x 512 x 2 = 2,048; zeros dropped (sym on Marlin); no act-order
    fmt = Gptq.from_config(
        {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}
    )
    assert _bytes(fmt, ctx=AMPERE) == 67_584


def test_gptq_desc_act_keeps_g_idx_and_sort_indices() -> None:
    # 67,584 + g_idx 256 x 4 + sort indices 256 x 4 = 67,584 + 2,048
    fmt = Gptq.from_config({"bits": 4, "group_size": 128, "sym": True, "desc_act": True})
    assert _bytes(fmt, ctx=AMPERE) == 69_632


def test_gptq_without_marlin_keeps_zeros_and_g_idx() -> None:
    # compute capability 7.5: plain gptq: 65,536 + 2,048 scales + qzeros 2 x 512 x 4 / 8 = 512 + g_idx 1,024
    fmt = Gptq.from_config({"bits": 4, "group_size": 128, "sym": True})
    assert _bytes(fmt, ctx=TURING) == 69_120


def test_gptq_dynamic_negative_pattern_leaves_module_unquantized() -> None:
    fmt = Gptq.from_config({"bits": 4, "group_size": 128, "dynamic": {r"-:.*mlp\.up_proj": {}}})
    assert _bytes(fmt, ctx=AMPERE) == 262_144


def test_gptq_8bit_channelwise() -> None:
    # group_size -1: one group. 256 x 512 x 8 / 8 = 131,072 + scales 512 x 2 = 1,024
    fmt = Gptq.from_config({"bits": 8, "group_size": -1, "sym": True})
    assert _bytes(fmt, ctx=AMPERE) == 132_096


def test_compressed_tensors_w4a16_group_128_symmetric() -> None:
    # weight_packed 65,536 + weight_scale (bf16) 2 x 512 x 2 = 2,048 + weight_shape 2 x int64 = 16
    q = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "ignore": ["lm_head"],
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {
                    "num_bits": 4,
                    "type": "int",
                    "strategy": "group",
                    "group_size": 128,
                    "symmetric": True,
                },
            }
        },
    }
    assert _bytes(CompressedTensors.from_config(q)) == 67_600


def test_compressed_tensors_fp8_per_channel() -> None:
    # 131,072 fp8 bytes + 512 fp32 channel scales x 4 = 2,048
    q = {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {
            "g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}
        },
    }
    assert _bytes(CompressedTensors.from_config(q)) == 133_120


def test_compressed_tensors_nvfp4_native_blackwell_swizzle() -> None:
    # values 256 x 512 / 2 = 65,536; fp8 scales: 512 rows x 256 / 16 = 16 cols = 8,192 (already multiples
    # of 128 and 4, so the swizzle adds nothing); 2 fp32 global scales = 8. Total 73,736.
    q = {
        "quant_method": "compressed-tensors",
        "format": "nvfp4-pack-quantized",
        "config_groups": {
            "g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "group_size": 16}}
        },
    }
    assert _bytes(CompressedTensors.from_config(q), ctx=BLACKWELL) == 73_736
    # N = 100 on Blackwell: rows padded to 128: 128 x 16 = 2,048 scale bytes; values 256 x 100 / 2 = 12,800
    assert _bytes(CompressedTensors.from_config(q), ctx=BLACKWELL, n=100) == 12_800 + 2_048 + 8


def test_compressed_tensors_ignore_regex() -> None:
    q = {
        "quant_method": "compressed-tensors",
        "ignore": ["re:.*mlp\\.up_proj$"],
        "config_groups": {
            "g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}
        },
    }
    assert _bytes(CompressedTensors.from_config(q)) == 262_144


def test_modelopt_fp8_and_nvfp4() -> None:
    # FP8 per-tensor: 131,072 + fp32 weight scale 4 + fp32 input scale 4
    assert _bytes(ModelOpt.from_config({"quant_method": "modelopt", "quant_algo": "FP8"})) == 131_080
    # NVFP4 on Hopper (no swizzle): 65,536 + 8,192 + 8
    nvfp4 = ModelOpt.from_config(
        {
            "quantization": {
                "quant_algo": "NVFP4",
                "group_size": 16,
                "exclude_modules": ["lm_head", "model.layers.*.mlp.gate"],
            }
        }
    )
    assert _bytes(nvfp4) == 73_736
    assert _bytes(nvfp4, LinearWeight("lm_head", K, N, role="lm_head")) == 262_144  # excluded


def test_modelopt_mixed_precision_per_layer() -> None:
    q = {
        "quant_method": "modelopt",
        "quant_algo": "MIXED_PRECISION",
        "quantized_layers": {"model.layers.0.mlp.up_proj": {"quant_algo": "FP8"}},
    }
    fmt = ModelOpt.from_config(q)
    assert _bytes(fmt) == 131_080
    assert _bytes(fmt, LinearWeight("model.layers.0.mlp.down_proj", K, N)) == 262_144  # not listed


def test_fp8_block_128() -> None:
    # 131,072 + ceil(512 / 128) x ceil(256 / 128) = 4 x 2 = 8 fp32 scales = 32
    fmt = Fp8.from_config({"quant_method": "fp8", "weight_block_size": [128, 128]})
    assert _bytes(fmt) == 131_104


def test_fp8_online_per_tensor() -> None:
    assert _bytes(ONLINE_FP8) == 131_072 + 4


def test_bitsandbytes_nf4_double_quant_and_plain() -> None:
    # 131,072 / 2 = 65,536; 2,048 blocks of 64: uint8 absmax 2,048 + ceil(2,048 / 256) = 8 fp32 = 32
    assert _bytes(IN_FLIGHT_BNB) == 65_536 + 2_048 + 32
    # without double quant: fp32 absmax 2,048 x 4 = 8,192
    assert _bytes(BitsAndBytes.from_config({"load_in_4bit": True})) == 65_536 + 8_192


def test_bitsandbytes_8bit() -> None:
    # int8 131,072 + SCB fp32 per output row 512 x 4 = 2,048
    assert _bytes(BitsAndBytes.from_config({"load_in_8bit": True})) == 133_120


def test_auto_round_int4_and_unquantized_blocks() -> None:
    q = {
        "quant_method": "auto-round",
        "bits": 4,
        "group_size": 128,
        "sym": True,
        "block_name_to_quantize": "model.layers",
        "extra_config": {"model.layers.0.mlp.down_proj": {"bits": 16}},
    }
    fmt = AutoRound.from_config(q)
    assert _bytes(fmt) == 65_536 + 2_048  # GPTQ-packed, symmetric: no zero points
    assert _bytes(fmt, LinearWeight("model.layers.0.mlp.down_proj", K, N)) == 262_144  # extra_config 16 bits
    assert _bytes(fmt, LinearWeight("model.visual.blocks.0.attn.qkv", K, N)) == 262_144  # outside the blocks


def test_mxfp4_experts_by_backend() -> None:
    # gpt-oss-120b expert shapes: hidden 2880, intermediate 2880, count 1 (one expert)
    w13 = LinearWeight("model.layers.0.mlp.experts", 2880, 5760, count=1, role="experts_w13")
    w2 = LinearWeight("model.layers.0.mlp.experts", 2880, 2880, count=1, role="experts_w2", parallel="row")
    fmt = Mxfp4()
    # Marlin (Ampere): hidden 2880 -> 3072, intermediate 2880 -> 2944.
    #   w13 (3072 in, 5888 out): 3072 x 5888 / 2 = 9,043,968 values + 3072 / 32 x 5888 = 565,248 scales
    assert fmt.linear_bytes(w13, 2880, 5760, AMPERE) == 9_043_968 + 565_248
    #   w2 (2944 in, 3072 out): 4,521,984 + 92 x 3072 = 282,624
    assert fmt.linear_bytes(w2, 2880, 2880, AMPERE) == 4_521_984 + 282_624
    # Hopper (Triton): no MoE padding (2880 is a multiple of 64); the Hopper value layout pads the
    # stored matrix to inputs 2944 (128) x outputs 5888 (256): 8,667,136 bytes; the scale layout pads
    # the scales' outputs to 5888 too: 90 blocks x 5888 = 529,920
    assert fmt.linear_bytes(w13, 2880, 5760, HOPPER) == 8_667_136 + 529_920
    # non-expert linears stay unquantized
    assert fmt.linear_bytes(LIN, K, N, HOPPER) == 262_144


def test_dispatch_by_quant_method_and_override() -> None:
    assert isinstance(quant_format({"quant_method": "awq", "bits": 4, "group_size": 128}, None), Awq)
    assert quant_format(None, "fp8") is ONLINE_FP8
    assert quant_format(None, None).method == "none"
    assert quant_format({"quant_method": "gguf"}, None) is None  # not modelled: caller falls back
    with pytest.raises(InvalidInputError, match="awq"):
        quant_format(None, "awq")


def test_gptq_forced_by_the_user_skips_marlin_on_any_gpu() -> None:
    # --quantization gptq on a GPTQ checkpoint (q003, GB10): the exllama kernel, even where Marlin runs.
    # 65,536 packed + scales 2,048 + zeros 2 x 512 x 4 / 8 = 512 + one g_idx 256 x 4 = 1,024 (act-order)
    config = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": True}
    forced = quant_format(config, "gptq")
    assert _bytes(forced, ctx=BLACKWELL) == 65_536 + 2_048 + 512 + 1_024
    # no override (or gptq_marlin): Marlin drops the zeros and keeps g_idx + sort indices (2 x 1,024)
    assert _bytes(quant_format(config, None), ctx=BLACKWELL) == 65_536 + 2_048 + 2_048
    assert _bytes(quant_format(config, "gptq_marlin"), ctx=BLACKWELL) == 65_536 + 2_048 + 2_048


@pytest.mark.parametrize(
    ("module", "role", "expected"),
    [
        # excluded by "model.language_model.layers.0.mlp*": bf16, 256 x 512 x 2
        ("model.language_model.layers.0.mlp.gate_proj", "linear", 262_144),
        ("model.language_model.layers.0.self_attn.q_proj", "linear", 262_144),
        ("model.vision_tower.encoder.layers.3.mlp.up_proj", "linear", 262_144),
        # the experts sit beside mlp, not under it: NVFP4, 256 x 512 / 2 = 65,536 values + 512 x 256 / 16
        # = 8,192 fp8 scales (no swizzle on 12.1) + two fp32 global scales
        ("model.language_model.layers.0.experts", "experts_w13", 65_536 + 8_192 + 8),
    ],
)
def test_modelopt_nvfp4_experts_only_exclude_modules(module: str, role: str, expected: int) -> None:
    # nvidia/Gemma-4-26B-A4B-NVFP4's hf_quant_config.json layout (nested under "quantization").
    fmt = quant_format(
        {
            "quant_method": "modelopt",
            "quantization": {
                "quant_algo": "NVFP4",
                "group_size": 16,
                "exclude_modules": [
                    "lm_head",
                    "model.embed_vision*",
                    "model.language_model.layers.0.mlp*",
                    "model.language_model.layers.0.router*",
                    "model.language_model.layers.0.self_attn*",
                    "model.vision_tower*",
                ],
            },
        },
        None,
    )
    weight = LinearWeight(module, K, N, role=role)  # type: ignore[arg-type]
    assert _bytes(fmt, weight, ctx=QuantContext(2, (12, 1))) == expected
