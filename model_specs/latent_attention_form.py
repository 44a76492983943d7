"""What vLLM 0.32 caches for attention in families whose config carries an MLA latent (kv_lora_rank).

A config with kv_lora_rank does not by itself mean vLLM caches the latent. vLLM keeps the compressed
latent (one head of kv_lora_rank + qk_rope_head_dim per token, the same on every TP rank) only where
the model class builds MLAAttention; other classes decompress the latent and page per-head K and V of
qk_nope_head_dim + qk_rope_head_dim each (V zero-padded up to the K size), split across TP ranks
like ordinary multi-head attention:

- MiniCPM3 always: vllm/model_executor/models/minicpm3.py builds
  `Attention(num_local_heads, qk_head_dim, num_kv_heads=num_local_heads)`.
- Sarvam-MLA served as DeepseekV3ForCausalLM (the architecture transformers writes into its default
  config): DeepseekV2DecoderLayer takes MLA only when `ModelConfig.use_mla`, and
  `ModelArchConfigConvertor.is_deepseek_mla` does not list model_type "sarvam_mla", so the layer is
  DeepseekV2Attention with the same per-head pages. The released checkpoint names
  SarvamMLAForCausalLM, whose vLLM class (models/sarvam.py) always wraps MultiHeadLatentAttention.
"""

from __future__ import annotations

from hkv.model_specs.config_view import ConfigView

# Families whose vLLM class always pages per-head K/V although the config has an MLA latent.
ALWAYS_EXPANDED_FAMILIES = frozenset({"minicpm3"})
# Families whose vLLM class caches the latent only under these architectures.
LATENT_ONLY_UNDER: dict[str, frozenset[str]] = {"sarvam_mla": frozenset({"SarvamMLAForCausalLM"})}


def caches_expanded_heads(view: ConfigView) -> bool:
    """True when vLLM pages decompressed per-head K/V for this latent-attention config."""
    if view.family in ALWAYS_EXPANDED_FAMILIES:
        return True
    latent_archs = LATENT_ONLY_UNDER.get(view.family)
    if latent_archs is None:
        return False
    named = [str(a) for a in view.get("architectures") or ()]
    if not named or latent_archs & set(named):
        return False  # no architecture named: the released checkpoint's class
    view.note(f"architectures {named} is not {min(latent_archs)}: vLLM serves model_type "
              f"{view.family!r} there without MLA (use_mla is false for it) and pages per-head K/V")
    return True


def expanded_head_dim(view: ConfigView) -> int:
    """K size per head of a decompressed latent layer; V is padded to it in the page."""
    return view.int_value("qk_nope_head_dim") + view.int_value("qk_rope_head_dim")
