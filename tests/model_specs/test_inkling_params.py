"""Inkling's parameter count on its default config (transformers 5.24's InklingTextConfig, 66 layers:
55 local + 11 global, 256 routed + 2 shared experts in every layer), worked by hand.

Before param_count_inkling.py hkv gave it a Llama-shaped estimate of 39.84B (routed experts not
counted), so the weights budget was ~25x too small.
"""

from __future__ import annotations

import json
from pathlib import Path

from hkv.model_specs.from_hf_config import from_hf_config

CONFIG = Path(__file__).resolve().parents[1] / "data" / "configs" / "inkling_text.json"

H, V, KERNEL = 6144, 201024, 4
# global layer: q 6144x8192 + k,v 2x6144x1024 + r 6144x(64x16) + o 8192x6144 + q/k norms 2x128
#   + relative bank 16x1024 + K/V convs 2x1024x4
GLOBAL_ATTENTION = 50_331_648 + 12_582_912 + 6_291_456 + 50_331_648 + 256 + 16_384 + 8_192  # 119,562,496
# local layer: 16 KV heads (k,v 2x6144x2048), bank 16x512 (the window), K/V convs 2x2048x4
LOCAL_ATTENTION = 50_331_648 + 25_165_824 + 6_291_456 + 50_331_648 + 256 + 8_192 + 16_384  # 132,145,408
# router (256 + 2) x 6144 + global scale 1 + routed 256 x 3 x 6144 x 3072 + shared 2 x 3 x 6144 x 3072
MOE = 1_585_152 + 1 + 14_495_514_624 + 113_246_208  # 14,610,345,985
REST = 2 * H + 2 * H * KERNEL  # two norms, attention- and MLP-output short convs: 61,440
EMBEDDINGS = 2 * V * H + 2 * H  # untied embed + lm_head, embed norm + final norm: 2,470,195,200


def test_default_inkling_counts_its_routed_experts() -> None:
    spec = from_hf_config(json.loads(CONFIG.read_text()), "inkling")
    expected = 11 * (GLOBAL_ATTENTION + MOE + REST) + 55 * (LOCAL_ATTENTION + MOE + REST) + EMBEDDINGS
    assert expected == 975_340_270_146
    assert spec.num_params == expected


def test_original_checkpoint_names_swap_the_mlp_widths() -> None:
    """Original checkpoints: intermediate_size is the experts' width, dense_intermediate_size the dense
    MLP's, dense_mlp_idx the number of leading dense layers (transformers and vLLM both swap)."""
    cfg = json.loads(CONFIG.read_text())
    hf = dict(cfg, num_hidden_layers=6, layer_types=cfg["layer_types"][:6], mlp_layer_types=["dense"] + ["sparse"] * 5)
    og = {k: v for k, v in hf.items() if k not in ("mlp_layer_types", "moe_intermediate_size")}
    og.update(intermediate_size=3072, dense_intermediate_size=24576, dense_mlp_idx=1)
    # layers 0-4 local, 5 global; layer 0's MLP dense: gated 3 x 6144 x 24576 + global scale 1
    dense_layer = LOCAL_ATTENTION + 3 * H * 24576 + 1 + REST
    expected = dense_layer + 4 * (LOCAL_ATTENTION + MOE + REST) + (GLOBAL_ATTENTION + MOE + REST) + EMBEDDINGS
    assert from_hf_config(hf, "hf").num_params == expected
    assert from_hf_config(og, "og").num_params == expected
