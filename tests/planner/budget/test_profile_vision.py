"""The vision tower's part of vLLM's profile run (planner/budget/vision_profile.py), worked by hand.

Shapes from the public config.json copies in tests/data/vllm_startups/configs; image counts and
sizes from the logs' "Encoder cache will be initialized with a budget of 16384 tokens, and
profiled with 1 image items of the maximum feature size" lines (r001; r003: 65536 tokens, 4 items).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.vision_tower import VisionTower, vision_tower_of
from hkv.planner.budget.budget_constants import SHIPPED
from hkv.planner.budget.profile import profile_terms
from hkv.planner.budget.profile_activation import ForwardShape, activation_peak
from hkv.planner.budget.vision_profile import VisionProfile, pinned_host_bytes, vision_profile
from hkv.planner.plan_config import PlanConfig

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "vllm_startups" / "configs"


def _config(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


def test_qwen35_tower_from_its_config() -> None:
    # vision_config: hidden 1152, intermediate 4304, 3 channels x temporal 2 x 16 x 16, merge 2 x 2
    assert vision_tower_of(_config("qwen3.5-9b.json")) == VisionTower(1152, 4304, 1536, 4)


def test_other_towers_are_not_described() -> None:
    assert vision_tower_of(_config("mistral-small-3.2-24b-instruct-2506.json")) is None  # Pixtral
    assert vision_tower_of(_config("gemma-3-4b-it.json")) is None  # SigLIP
    assert vision_tower_of(_config("llama-3.1-8b-instruct.json")) is None  # no tower


def test_profile_arithmetic() -> None:
    # hidden 8, intermediate 40, 6 values per patch, 4 patches per token; 2 items of 3 tokens = 24 patches
    profile = VisionProfile(VisionTower(8, 40, 6, 4), items=2, tokens_per_item=3, dtype_bytes=2)
    assert profile.num_patches == 24
    assert profile.pixel_bytes() == 24 * 6 * 2  # 288
    # attention 4 x 8 + 8 x 8 = 96 < MLP 3 x 8 + 2 x 40 = 104 elements per patch
    assert profile.transient_bytes() == 24 * 104 * 2  # 4,992
    # TP 2: attention 32 + 32 = 64, MLP 24 + 40 = 64
    assert VisionProfile(VisionTower(8, 40, 6, 4), 2, 3, 2, tp=2).transient_bytes() == 24 * 64 * 2


def test_items_are_the_budget_over_one_item() -> None:
    tower = VisionTower(8, 40, 6, 4)
    assert vision_profile(tower, 65536, 16384, 2).items == 4  # r003's log: 4 image items
    assert vision_profile(tower, 16384, 16384, 2).items == 1  # r001's log: 1 image item
    assert vision_profile(tower, 16384, 0, 2) is None  # item size unknown
    assert vision_profile(None, 16384, 16384, 2) is None


def test_tower_phase_and_decoder_phase_are_sequential() -> None:
    shape = ForwardShape(4, 8, 2)  # kept 4 x 2 = 8 B and forward extra (4 + 24) x 2 = 56 B per token
    # decoder phase on 10 tokens: kept 80 + encoder 100 + max(forward 560, sampler 300) = 740
    small = activation_peak(shape, 10, 300, 100, pixel_bytes=50, vision_bytes=700)
    assert small.bytes == 50 + 740 and small.dominant == "forward"
    large = activation_peak(shape, 10, 300, 100, pixel_bytes=50, vision_bytes=900)
    assert large.bytes == 50 + 900 and large.dominant == "vision tower"


def test_pinned_host_bytes() -> None:
    profile = VisionProfile(VisionTower(8, 40, 6, 4), 2, 3, 2)
    # inputs_embeds' host half 100 tokens x hidden 16 x 2 B = 3,200, plus the 288-byte pixel staging
    assert pinned_host_bytes(profile, 100, 16, 2) == 3200 + 288
    assert pinned_host_bytes(None, 100, 16, 2) == 3200


def test_r001_qwen35_9b_l40s_activation() -> None:
    """Qwen3.5-9B, 0.19, 8,192 batched tokens, 256 sequences, one 16,384-token image."""
    model = from_hf_config(_config("qwen3.5-9b.json"), "qwen3.5-9b")
    cfg = PlanConfig(gpu="l40s", vllm_version="0.19.0", max_num_seqs=256)
    activation, _, non_torch = profile_terms(model, cfg, 8192)
    pixels = 65536 * 1536 * 2  # 16,384 tokens x 4 patches, 1,536 bf16 values each: 201,326,592
    tower = 65536 * 12 * 1152 * 2  # attention's 12 widths of 1,152 beat the MLP's 3 x 1152 + 2 x 4304
    # decoder phase: kept 8192 x 4096 x 2 + encoder 16384 x 4096 x 2 + sampler 256 x 248320 x 14
    decoder = 67_108_864 + 134_217_728 + 889_978_880  # 1,091,305,472 < the tower's 1,811,939,328
    assert tower > decoder
    assert activation.bytes == pixels + tower  # 1.875 GiB
    assert "vision tower" in activation.note
    lm_only = profile_terms(model, PlanConfig(gpu="l40s", vllm_version="0.19.0", max_num_seqs=256,
                                              language_model_only=True), 8192)[0]
    # no encoder outputs, no tower: kept + the forward, now above the sampler: per token the MLP's
    # (4096 + 3 x 12288) x 2 B and a GDN piece's held hidden + 2 x 2048 + 3 x 4096 elements x 2 B
    # (mixer_liveness.py): (81,920 + 40,960) x 8192 = 1,006,632,960
    assert lm_only.bytes == 67_108_864 + 1_006_632_960
    assert non_torch.bytes == profile_terms(model, PlanConfig(gpu="h100", vllm_version="0.19.0",
                                                              max_num_seqs=256), 8192)[2].bytes  # discrete


def test_r003_unified_memory_counts_pinned_host_buffers() -> None:
    """Qwen3.6-27B on GB10 (unified memory), 65,536 batched tokens: 4 images of 16,384 tokens."""
    model = from_hf_config(_config("nvidia-qwen3.6-27b-nvfp4.json"), "qwen3.6-27b")
    constants = replace(SHIPPED, context_bytes=100, linear_attention_bytes=20, unified_memory_bytes=3)
    cfg = PlanConfig(gpu="gb10", vllm_version="0.23.1", max_num_seqs=8, budget_constants=constants)
    activation, _, non_torch = profile_terms(model, cfg, 65536)
    pixels = 4 * 65536 * 1536 * 2  # 805,306,368
    kept = encoder = 65536 * 5120 * 2  # 671,088,640 each
    # the MLP's live set plus what a GDN layer's piece holds through it (mixer_liveness.py):
    # hidden 5120 + 2 x key_dim 2048 + 3 x value_dim 6144 = 27,648 elements per token
    forward = 65536 * (5120 + 3 * 17408 + 27648) * 2  # 11,140,071,424, beats the tower's 262144 x 13824 x 2
    assert activation.bytes == pixels + kept + encoder + forward  # 12.375 GiB
    inputs_embeds = 65536 * 5120 * 2
    # the context, the linear-attention kernels and the host's share (the test's own constants), and
    # the pinned host buffers: inputs_embeds' host half and the dummy images' staging
    assert non_torch.bytes == 100 + 20 + 3 + inputs_embeds + pixels
