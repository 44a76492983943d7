"""dots3 (model_type dots3_note / dots3_note_text): DSA layers beside sliding-window MLA layers, with
every latent page padded to the sliding layers' width, as vLLM 0.32 caches them.

vLLM's Dots3Note (vllm/models/dots3_note/nvidia/model.py) builds per layer, by `layer_types`:

- "indexed_attention": Dots3NoteFullAttention, DeepSeek-V3.2's sparse MLA whose latent cache rows
  are padded to the sliding layers' latent: Dots3NotePaddedMLAAttention.get_kv_cache_spec replaces
  the head size with `swa_kv_lora_rank + swa_qk_rope_head_dim` (model.py:227-240, 306), in the KV
  cache dtype; before it (the MLA module is popped and registered again after the indexer), the
  lightning indexer's key cache (indexer_cache.py: 128 fp8 + 4 B scale, uint8, 64-token blocks);
- "sliding_attention": Dots3NoteSlidingAttention, a dense MLA of `swa_kv_lora_rank +
  swa_qk_rope_head_dim` with `sliding_window_size` (model.py:352-480: MLAAttention with
  sliding_window -> SlidingWindowMLASpec).

Its DSA backend declares block-outermost layouts ("NOTE packs the smaller DSA index pages beside
the padded MLA/SWA pages", attention.py:693-700), so vLLM groups the pages by packing them side by
side (planner/compressed_attention_layout.py), as for DeepSeek-V4.

Config keys: vLLM reads the checkpoint's `swa_kv_lora_rank`, `swa_qk_rope_head_dim` and
`sliding_window_size`; transformers' Dots3NoteTextConfig writes the sliding layers'
`per_layer_config[..]["kv_lora_rank"]` and `sliding_window` instead, which are read when the
checkpoint keys are absent (with a note).
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, CacheRole
from hkv.model_specs.compressed_attention import CompressedCacheSpec
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.indexer_cache import indexer_key_bytes
from hkv.model_specs.layer_desc import AttentionDesc, CacheLayer
from hkv.model_specs.layer_kinds import LayerKind


@dataclass(frozen=True)
class PaddedLatentDesc(AttentionDesc):
    """A dots3 latent (or indexer key) cache: `head_dim` elements a token, of the KV cache dtype
    (`fixed_dtype_bytes` for the indexer's uint8), one page per block, no alignment padding."""

    module: str = "attn"

    @property
    def name(self) -> str:
        return f"layers.{self.layer_idx}.{self.module}"

    def cache_spec(self, opts: CacheOptions, *, engine_windows: bool = False) -> AttentionCacheSpec | None:
        element_bytes = self.fixed_dtype_bytes or opts.kv_dtype_bytes
        return CompressedCacheSpec(self.kind, 1, self.head_dim, 0, element_bytes, window_len=self.window_len,
                                   is_mla=True, role=self.role, module=self.module,
                                   state_bytes=self.head_dim * element_bytes, page_alignment=1)


def _swa_latent_width(view: ConfigView, sliding: list[int]) -> int:
    rope = view.int_value("swa_qk_rope_head_dim") if view.has("swa_qk_rope_head_dim") else view.int_value(
        "qk_rope_head_dim")
    if view.has("swa_kv_lora_rank"):
        return view.int_value("swa_kv_lora_rank") + rope
    per_layer = view.get("per_layer_config") or {}
    ranks = {int((per_layer.get(f"{i:02d}") or {}).get("kv_lora_rank", view.int_value("kv_lora_rank")))
             for i in sliding}
    if len(ranks) != 1:
        raise InvalidConfigError(f"dots3: the sliding layers' kv_lora_rank differ ({sorted(ranks)}); vLLM pads every "
                                 "latent to one swa_kv_lora_rank")
    view.note("swa_kv_lora_rank absent: the sliding layers' per_layer_config kv_lora_rank "
              f"({next(iter(ranks))}) taken for it")
    return ranks.pop() + rope


def padded_latent_layers(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...],
                         model_dtype: int) -> tuple[CacheLayer, ...]:
    """indexer keys + padded latent on indexed layers, the sliding latent elsewhere, layer by layer."""
    sliding = [i for i, k in enumerate(kinds) if LayerKind.SLIDING in k]
    width = _swa_latent_width(view, sliding)
    window = view.int_value("sliding_window_size") if view.has("sliding_window_size") else view.int_value(
        "sliding_window")
    key_bytes = indexer_key_bytes(view.int_value("index_head_dim"))
    layers: list[CacheLayer] = []
    for idx, layer_kinds in enumerate(kinds):
        if LayerKind.INDEXER in layer_kinds:
            layers.append(PaddedLatentDesc(layer_idx=idx, kind=CacheKind.FULL, num_kv_heads=1, head_dim=key_bytes,
                                           head_dim_v=0, is_mla=True, role=CacheRole.INDEXER, fixed_dtype_bytes=1,
                                           module="indexer"))
        if LayerKind.SLIDING in layer_kinds:
            layers.append(PaddedLatentDesc(layer_idx=idx, kind=CacheKind.SLIDING, num_kv_heads=1, head_dim=width,
                                           head_dim_v=0, window_len=window, is_mla=True))
        elif LayerKind.FULL in layer_kinds:
            layers.append(PaddedLatentDesc(layer_idx=idx, kind=CacheKind.FULL, num_kv_heads=1, head_dim=width,
                                           head_dim_v=0, is_mla=True))
    return tuple(layers)


def padded_latent_draft_layers(view: ConfigView, num_layers: int, count: int) -> tuple[CacheLayer, ...]:
    """None: vLLM's Dots3NoteMTP builds a Dots3NoteDecoderLayer at index num_hidden_layers, whose
    attention it reads from layer_types at that index (model.py:526), an index a config listing
    num_hidden_layers types lacks; hkv does not guess the drafter's caches (noted)."""
    view.note(f"the {count} MTP layer(s) are not planned under speculative decoding: layer_types gives "
              "their attention no type")
    return ()
