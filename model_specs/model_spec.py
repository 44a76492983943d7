"""A model as hkv sees it: its cache layers plus the numbers the memory budget needs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import LayerCacheSpec
from hkv.model_specs.checkpoint_bytes import CheckpointBytes
from hkv.model_specs.family_specs import is_conv_state_desc
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer
from hkv.model_specs.param_breakdown import ParamBreakdown
from hkv.model_specs.vision_tower import VisionTower


@dataclass(frozen=True)
class ModelSpec:
    """Everything the planner reads from a model; built by `from_hf_config`.

    `cache_layers` is ordered by layer index (attention before mixer within a layer), which is
    the order vLLM registers layers in and therefore the order grouping sees them.
    """

    name: str  # catalog short name or the path it was read from
    model_id: str  # HF id where known
    model_type: str
    num_hidden_layers: int
    cache_layers: tuple[CacheLayer, ...]
    max_model_len: int
    hidden_size: int
    vocab_size: int
    intermediate_size: int
    dtype_bytes: int  # weight dtype from the config's torch_dtype / dtype
    num_params: int  # analytic or exact parameter count
    weights_bytes_exact: int | None = None  # from safetensors headers when a directory was given
    quantized_weights_bytes: int | None = None  # estimate for a quantized config (mxfp4, fp8)
    verified: bool = True  # False: the config was reconstructed from partial sources
    note: str = ""  # every assumption made while reading the config ("; "-separated), else ""
    architectures: tuple[str, ...] = ()  # config `architectures`, e.g. ("Gemma3ForConditionalGeneration",)
    has_sinks: bool = False  # learned attention-sink logits per head (gpt-oss); no extra cache
    attn_logit_softcap: float | None = None  # Gemma 2's tanh cap on attention logits
    source: str = ""  # config origin: "catalog:<name>", a path, "hf-cache:<path>", "hub:<id>@<commit>"
    draft_layers: tuple[CacheLayer, ...] = ()  # MTP layers: cached only under speculative decoding
    family: str = ""  # the text model's type that chose hkv's rules (e.g. "qwen3_5_moe_text")
    checkpoint_bytes: CheckpointBytes | None = None  # safetensors bytes by part; total = weights_bytes_exact
    source_note: str = ""  # one line: the fallback taken when the Hub could not be asked, else ""
    # Every weight with its shape, part and TP split (param_breakdown.py); None when not built.
    param_breakdown: ParamBreakdown | None = field(default=None, compare=False, repr=False)
    # The config's quantization_config as read (quantization formats parse it in the planner).
    quantization_config: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    # Routed MoE (the fused-MoE workspaces of vLLM's profile run): experts per token, 0 when dense.
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0  # one expert's intermediate size
    # The Qwen3-VL-style vision tower vLLM profiles on dummy images (model_specs/vision_tower.py); None otherwise.
    vision_tower: VisionTower | None = None
    # config.json as read: other engines' sizing reads keys the spec does not keep (SGLang's extras).
    hf_config: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def cache_specs(self, opts: CacheOptions, *,
                    engine_windows: bool = False) -> tuple[tuple[CacheLayer, LayerCacheSpec | None], ...]:
        """Per-rank spec of every cache layer (None: KV-shared), the MTP draft layers last when
        `opts.speculative_tokens` > 0. `engine_windows`: give layers whose configured window
        covers the context a sliding spec, as vLLM allocates them."""
        layers = self.cache_layers + (self.draft_layers if opts.speculative_tokens else ())
        return tuple((layer, layer.cache_spec(opts, engine_windows=engine_windows)) for layer in layers)

    def layer_mix(self) -> dict[str, int]:
        """Counts per layer kind, e.g. {"sliding": 52, "full": 10}; shared layers as "shared"."""
        counts: Counter[str] = Counter()
        for layer in self.cache_layers:
            if is_conv_state_desc(layer):
                counts["conv_state"] += 1  # Inkling's short-conv streams, cached as a 4-token window
            elif isinstance(layer, AttentionDesc):
                counts["shared" if layer.kv_shared_with is not None else layer.kind.value] += 1
            else:
                counts[layer.variant] += 1
        return dict(counts)

    @property
    def weights_bytes(self) -> int:
        if self.weights_bytes_exact is not None:
            return self.weights_bytes_exact
        if self.quantized_weights_bytes is not None:
            return self.quantized_weights_bytes
        return self.num_params * self.dtype_bytes
