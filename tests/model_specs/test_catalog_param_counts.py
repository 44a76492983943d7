"""Analytic parameter counts of real catalog models against hand arithmetic and published figures."""

from __future__ import annotations

from hkv.model_specs import load_model_spec


def test_llama_3_1_8b() -> None:
    # embed 128,256 x 4096 = 525,336,576, untied lm_head the same -> 1,050,673,152.
    # layer: q 4096^2 = 16,777,216; k, v 4096 x 1024 = 4,194,304 each; o 16,777,216 -> 41,943,040;
    # mlp 3 x 4096 x 14,336 = 176,160,768; norms 8192 -> 218,112,000; x 32 = 6,979,584,000.
    # + final norm 4096 -> 8,030,261,248 (the published Llama-3.1-8B count).
    assert load_model_spec("llama-3.1-8b").num_params == 8_030_261_248


def test_mistral_7b() -> None:
    # Same layer as Llama-3.1-8B (218,112,000 x 32 = 6,979,584,000); vocab 32,000:
    # 2 x 32,000 x 4096 = 262,144,000; + 4096 -> 7,241,732,096.
    spec = load_model_spec("mistral-7b-v0.1")
    assert spec.num_params == 7_241_732_096 and spec.weights_bytes == 2 * 7_241_732_096


def test_qwen3_8b() -> None:
    # embed 151,936 x 4096 = 622,329,856 x 2 (untied) = 1,244,659,712.
    # layer: attention 41,943,040 + q/k norms 256 + mlp 3 x 4096 x 12,288 = 150,994,944 + norms 8192
    # = 192,946,432; x 36 = 6,946,071,552; + 4096 -> 8,190,735,360.
    assert load_model_spec("qwen3-8b").num_params == 8_190_735_360


def test_published_totals_are_close() -> None:
    # Published (model cards) totals, to 1 %: the analytic counts mirror transformers' modules.
    published = {"bamba-9b": 9.78e9, "deepseek-v3": 671e9, "minimax-m1": 456e9, "glm-4.5-air": 106e9,
                 "qwen3-next-80b-a3b": 80e9, "jamba-v0.1": 52e9, "lfm2-1.2b": 1.17e9, "lfm2-8b-a1b": 8.3e9}
    for name, total in published.items():
        assert abs(load_model_spec(name).num_params / total - 1) < 0.01, name
