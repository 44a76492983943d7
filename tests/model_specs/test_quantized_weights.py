"""Weight bytes of quantized catalog checkpoints (no safetensors): hand arithmetic."""

from hkv.model_specs import load_model_spec


def test_gpt_oss_120b_mxfp4_experts():
    spec = load_model_spec("gpt-oss-120b")
    # experts: 36 layers x 128 experts x 3 x 2880 x 2880 = 114,661,785,600 params at 4.25 bits
    #   = 60,914,073,600 B; the other 116,829,156,672 - 114,661,785,600 = 2,167,371,072 params in
    #   bf16 = 4,334,742,144 B; total 65,248,815,744 B (the published checkpoint is about 65 GB).
    assert spec.num_params == 116_829_156_672
    assert spec.weights_bytes == 60_914_073_600 + 4_334_742_144
    assert "mxfp4" in spec.note


def test_unquantized_model_uses_dtype_bytes():
    spec = load_model_spec("llama-3.1-8b")
    assert spec.quantized_weights_bytes is None
    assert spec.weights_bytes == spec.num_params * 2
