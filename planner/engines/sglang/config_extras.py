"""The few config.json values SGLang's sizing reads that hkv's ModelSpec does not keep."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hkv.planner.engines.sglang.minimax_sparse_pool import index_value_layers

# SGLang's stand-ins when a vision_config lacks them (adjust_mem_fraction_for_vlm: a ViT-L/14).
DEFAULT_VIT_LAYERS = 24
DEFAULT_VIT_HIDDEN_SIZE = 1024


@dataclass(frozen=True)
class SglangConfigExtras:
    """Values read straight from config.json.

    `vision_tower`: (num_hidden_layers, hidden_size) of the config's vision_config as SGLang reads
    them (24 and 1024 where a key is missing), None without a vision_config; SGLang lowers
    mem_fraction_static for multimodal models by the tower's size. `mamba_ssm_dtype`:
    the config's SSM state dtype (SGLang's default is float32, whatever the weights). `kv_lora_rank`
    and `qk_rope_head_dim`: MLA latent widths, for families hkv's spec pages per head (MiniCPM3).
    `sparse_index_value_layers`: MiniMax-M3's sparse layers whose index keeps a value beside its key
    (minimax_sparse_pool.index_value_layers; 0 for the published M3, which disables them all)."""

    vision_tower: tuple[int, int] | None = None
    mamba_ssm_dtype: str | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    sparse_index_value_layers: int = 0

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any]) -> SglangConfigExtras:
        text = config.get("text_config")
        text = text if isinstance(text, Mapping) else config
        vision = config.get("vision_config")
        ssm = text.get("mamba_ssm_dtype", config.get("mamba_ssm_dtype"))
        return cls(
            vision_tower=(int(_get(vision, "num_hidden_layers", DEFAULT_VIT_LAYERS)),
                          int(_get(vision, "hidden_size", DEFAULT_VIT_HIDDEN_SIZE)))
            if isinstance(vision, Mapping) else None,
            mamba_ssm_dtype=str(ssm) if ssm is not None else None,
            kv_lora_rank=_int_or_none(text.get("kv_lora_rank")),
            qk_rope_head_dim=_int_or_none(text.get("qk_rope_head_dim")),
            sparse_index_value_layers=index_value_layers(config),
        )


def _get(section: object, key: str, default: int) -> object:
    if isinstance(section, Mapping) and section.get(key) is not None:
        return section[key]
    return default


def _int_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
