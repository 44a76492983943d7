"""Families of transformers 5.23 that issue 11 names: planned where hkv models them (numbers by
hand), refused with what they are where it does not."""

import pytest

from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.resolve import load_model_spec

transformers = pytest.importorskip("transformers")


def _saved(tmp_path, model_type, **overrides):
    transformers.AutoConfig.for_model(model_type, **overrides).save_pretrained(tmp_path)
    return str(tmp_path)


def test_glm4_moe_lite_is_mla_in_every_layer(tmp_path):
    # GLM-4 MoE lite (GLM-4.7-Flash) caches DeepSeek's MLA latent: kv_lora_rank 512 + rope key 64
    # per token in one "head", 2 B each: 1,152 B per token and layer, 18,432 B per 16-token page.
    from hkv.planner.plan import plan
    from hkv.planner.plan_config import PlanConfig

    spec = load_model_spec(_saved(tmp_path, "glm4_moe_lite"))
    assert len(spec.cache_layers) == 47 and all(c.is_mla for c in spec.cache_layers)
    layout = plan(spec, PlanConfig(gpu="h200", max_model_len=32768)).reports["vllm"].layout
    assert [(g.kind.value, g.num_layers, g.page_size_bytes) for g in layout.groups] == [("full", 47, 18_432)]


@pytest.mark.parametrize("model_type, overrides, fragment", [
    ("zamba", {}, "Zamba's multi-head Mamba1 layers with shared attention blocks (vLLM does not serve Zamba v1)"),
    ("inkling2", {}, "'hybrid_sliding' is inkling2's sliding-window layer"),
])
def test_unmodeled_families_are_refused_with_what_they_are(tmp_path, model_type, overrides, fragment):
    with pytest.raises(InvalidConfigError, match="does not model") as err:
        load_model_spec(_saved(tmp_path, model_type, **overrides))
    assert fragment in str(err.value)


def test_lfm2_moe_without_layer_types_is_refused(tmp_path):
    # Lfm2MoeConfig's default leaves layer_types None (its own model cannot be built from it).
    with pytest.raises(InvalidConfigError, match="'lfm2_moe' needs layer_types"):
        load_model_spec(_saved(tmp_path, "lfm2_moe"))


def test_bailing_hybrid_is_kda_and_mla(tmp_path):
    # transformers' default: 42 layers, every 6th full attention (MLA: 512 + 64 latent, 1,152 B per
    # token in bf16), the rest Kimi delta attention sized as vLLM's BailingMoeV3 does:
    # num_attention_heads 32 x head_dim 64. conv 3 x (3 x 2,048) x 2 B = 36,864 B;
    # recurrent 32 x 64 x 64 x 4 B (fp32) = 524,288 B; 561,152 B per layer and request.
    from hkv.model_specs.cache_options import CacheOptions
    spec = load_model_spec(_saved(tmp_path, "bailing_hybrid"))
    assert spec.layer_mix() == {"kda": 35, "full": 7}
    state = next(c for c in spec.cache_layers if hasattr(c, "variant")).cache_spec(CacheOptions(tp=1))
    assert state.shapes == ((3, 6144), (32, 64, 64)) and state.state_bytes == 561_152
    mla = next(c for c in spec.cache_layers if getattr(c, "is_mla", False)).cache_spec(CacheOptions(tp=1))
    assert mla.bytes_per_token == 1152
    assert "linear_num_heads x linear_head_dim (32 x 128) disagree" in spec.note
