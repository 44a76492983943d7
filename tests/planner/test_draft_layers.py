"""`--draft-layers K` (EAGLE): K full-attention draft layers join the target's KV cache groups."""

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

GIB = 2**30


def _vllm(model, **options):
    cfg = PlanConfig(available_kv_memory_bytes=10 * GIB, max_num_batched_tokens=8192, max_model_len=8192,
                     speculative_tokens=3, **options)
    return plan(load_model_spec(model), cfg).reports["vllm"].layout


def test_gpt_oss_with_one_eagle_layer_is_the_1_5x_rule_case():
    # 18 sliding + 18 full + 1 EAGLE full = 19 full: 19 < 1.5 x 18, so the group size is 19 and the
    # sliding bucket gets 1 padding slot (1 / 18 = 5.56 %), as vLLM's group-size comment describes.
    layout = _vllm("gpt-oss-120b", draft_layers=1)
    assert [(g.kind.value, g.num_layers) for g in layout.groups] == [("sliding", 18), ("full", 19)]
    assert "Add 1 padding layers, may waste at most 5.56% KV cache memory" in layout.notes
    assert max(g.layer_ids[-1] for g in layout.groups) == 36  # the draft layer, numbered after the 36


def test_before_0_12_the_min_rule_splits_the_full_bucket():
    # min(18, 19) = 18: the 19 full layers take 2 groups (17 padding slots).
    layout = _vllm("gpt-oss-120b", draft_layers=1, vllm_version="0.11.2")
    assert [(g.kind.value, g.num_layers) for g in layout.groups] == [("sliding", 18), ("full", 10), ("full", 9)]


def test_eagle_with_chunked_attention_turns_the_hybrid_manager_off():
    # vLLM: "Hybrid KV cache manager is not yet supported with chunked local attention + eagle":
    # Llama-4-Scout's 36 chunked layers are cached as full, with the 12 full and 1 draft layer.
    layout = _vllm("llama-4-scout-17b-16e-instruct", tp=8, draft_layers=1)
    assert [(g.kind.value, g.num_layers) for g in layout.groups] == [("full", 49)]


@pytest.mark.parametrize("options", [dict(draft_layers=1, speculative_tokens=0), dict(draft_layers=0,
                                                                                       speculative_tokens=2)])
def test_draft_layers_need_speculative_tokens_and_a_positive_count(options):
    with pytest.raises(InvalidInputError, match="draft_layers must be a positive count"):
        PlanConfig(**options)


def test_a_model_without_full_attention_has_nothing_to_copy(tmp_path):
    transformers = pytest.importorskip("transformers")
    transformers.Mamba2Config(num_hidden_layers=2).save_pretrained(tmp_path)
    with pytest.raises(InvalidInputError, match="draft_layers: .*has none to copy"):
        plan(load_model_spec(str(tmp_path)), PlanConfig(gpu="h100", speculative_tokens=1, draft_layers=1))
