"""The shape of a Qwen-VL-style vision tower (patches merged spatially), as vLLM's profile run sees it.

vLLM profiles a multimodal model's vision encoder on dummy images of the largest size
(planner/budget/vision_profile.py); how much that run allocates depends on the tower's width,
its MLP width and how many raw values one patch carries. Only the Qwen3-VL tower (Qwen3-VL,
Qwen3.5, Qwen3.6: vision model_type "qwen3*", plain fc1-act-fc2 MLP) is described; others
(Qwen2/2.5-VL with their gated MLP and windowed attention, SigLIP, Pixtral, Gemma 4) return
None, so their tower's transient peak is left out of the budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class VisionTower:
    """One tower's widths. `patch_values`: raw values per patch (channels x temporal x patch x patch);
    `merge_factor`: patches per output token (spatial_merge_size squared)."""

    hidden_size: int
    intermediate_size: int
    patch_values: int
    merge_factor: int


def vision_tower_of(config: Mapping[str, Any]) -> VisionTower | None:
    """The tower of a config.json with a Qwen3-VL-style `vision_config`, else None."""
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping) or not str(vision.get("model_type") or "").startswith("qwen3"):
        return None
    try:
        channels = int(vision.get("in_channels") or vision.get("in_chans") or 3)
        patch = int(vision["patch_size"])
        return VisionTower(hidden_size=int(vision["hidden_size"]),
                           intermediate_size=int(vision["intermediate_size"]),
                           patch_values=channels * int(vision["temporal_patch_size"]) * patch * patch,
                           merge_factor=int(vision["spatial_merge_size"]) ** 2)
    except (KeyError, TypeError, ValueError):
        return None  # a partial vision_config: the tower's peak is left out, as for other towers
