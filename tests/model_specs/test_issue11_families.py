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
    ("bailing_hybrid", {}, "Bailing's linear-attention layers are not modeled by hkv yet"),
    ("zamba2", {}, "Zamba2's Mamba2 layers with shared attention blocks are not modeled by hkv yet"),
    ("zamba", {}, "Zamba's Mamba layers with shared attention blocks are not modeled by hkv yet"),
    ("inkling2", {}, "'hybrid_sliding' is inkling2's sliding-window layer"),
    ("lfm2", {"num_hidden_layers": 4, "layer_types": ["conv", "conv", "full_attention", "conv"]},
     "'conv' is LFM2's short-convolution layer"),
])
def test_unmodeled_families_are_refused_with_what_they_are(tmp_path, model_type, overrides, fragment):
    with pytest.raises(InvalidConfigError, match="not model|not modeled") as err:
        load_model_spec(_saved(tmp_path, model_type, **overrides))
    assert fragment in str(err.value)
