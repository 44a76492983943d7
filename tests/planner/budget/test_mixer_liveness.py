"""What a gated-delta-net layer's compiled piece keeps alive through the MLP (mixer_liveness.py).

Expected values by hand from the published configs' dims (docs/notes_gdn_prefill_workspace.md
derives the tensors from vLLM's code).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.mixer_liveness import gdn_held_elements
from hkv.planner.budget.profile import forward_shape
from hkv.planner.budget.profile_activation import ForwardShape
from hkv.planner.plan_config import PlanConfig


@pytest.mark.parametrize(("model", "tp", "elements"), [
    # Qwen3.5-27B: hidden 5120, 16 key heads x 128, 48 value heads x 128 (key_dim 2048, value_dim 6144):
    # hidden + (2 x 2048 + 3 x 6144) / TP
    ("qwen3.5-27b", 1, 5120 + 4096 + 18432),
    ("qwen3.5-27b", 2, 5120 + (4096 + 18432) // 2),
    # Qwen3-Next-80B (interleaved qkvz): hidden 2048 + 2 x value_dim (32 heads x 128) / TP
    ("qwen3-next-80b-a3b", 1, 2048 + 2 * 4096),
    ("qwen3-next-80b-a3b", 4, 2048 + 2 * 4096 // 4),
    ("llama-3.1-8b", 1, 0),  # no gated delta net
])
def test_gdn_held_elements(model: str, tp: int, elements: int) -> None:
    assert gdn_held_elements(load_model_spec(model), tp) == elements


def test_held_elements_add_to_the_mlp_live_set_per_token() -> None:
    # 65,536 tokens x 27,648 held elements x 2 B = 3.375 GiB on top of the dense MLP's live set
    base = ForwardShape(5120, 17408, 2)
    held = replace(base, mixer_held_elements=27648)
    assert held.forward_extra_bytes(65536) - base.forward_extra_bytes(65536) == 65536 * 27648 * 2


def test_eager_holds_nothing_extra() -> None:
    model = load_model_spec("qwen3.5-27b")
    assert forward_shape(model, PlanConfig(gpu="h100")).mixer_held_elements == 27648 // 1
    assert forward_shape(model, PlanConfig(gpu="h100", enforce_eager=True)).mixer_held_elements == 0
