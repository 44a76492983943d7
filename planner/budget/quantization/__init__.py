"""Quantization formats: the bytes one rank holds for each linear weight, as vLLM stores them.

One format per file, each a frozen dataclass parsed from the checkpoint's `quantization_config`
(or from vLLM's `--quantization` when the checkpoint has none: fp8 online, bitsandbytes in-flight):
  awq.py                AWQ 4-bit: packed int32 weights, fp16 scales and packed zero points per group
  gptq.py               GPTQ n-bit: packed weights, scales, zero points (dropped when symmetric on
                        Marlin), g_idx and its sort indices with desc_act
  auto_round.py         AutoRound int4/int8 (GPTQ- or AWQ-packed), extra_config / block_name_to_quantize
  compressed_tensors.py compressed-tensors config_groups: pack-quantized WnA16, float-quantized FP8,
                        nvfp4-pack-quantized; `ignore` lists with `re:` patterns
  modelopt.py           NVIDIA ModelOpt FP8 / NVFP4 (group 16, fp8 scales), exclude_modules, mixed
  mxfp4.py              gpt-oss MXFP4 experts, with each kernel backend's padding per GPU generation
  fp8.py                block FP8 (weight_block_size) and per-tensor FP8 (vLLM's online quantization)
  bitsandbytes.py       bitsandbytes nf4/fp4 (blocksize 64, absmax) and 8-bit (int8 + row scales)
Every format answers `linear_bytes(weight, in_features, out_features)` for the per-rank shape; a
linear it leaves unquantized (skip lists, unsupported shapes) costs in_features x out_features x the
model dtype. Dense weights (embeddings, norms, routers) are never quantized here. `dispatch.py`
picks the format (`quant_format`). Pure: no torch, no I/O.
"""
