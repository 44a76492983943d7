"""Per-layer cache geometry of the families issue 11 added, against transformers' own caches.

Each case builds a tiny random model with transformers, runs 9 tokens through it with
`use_cache=True`, and reads what transformers actually cached per layer: key/value tensors
(batch, kv_heads, tokens, head_dim) for attention, conv states (batch, channels, kernel) and
recurrent states (batch, *dims) for recurrent mixers. hkv's ModelSpec (from the same config's
dict) must name the same layers, with the same KV heads and head sizes, and state tensors of the
same sizes. transformers keeps the whole conv kernel where vLLM keeps kernel - 1 columns, so
hkv's conv rows are compared with transformers' kernel - 1. Layers that read another layer's KV
(Gemma 4's shared layers) store nothing in either; the layer hkv names as the one they read must
be one transformers marks "store".
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hkv.model_specs.cache_options import CacheOptions  # noqa: E402
from hkv.model_specs.from_hf_config import from_hf_config  # noqa: E402
from hkv.model_specs.layer_desc import AttentionDesc, RecurrentDesc  # noqa: E402

TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=256,
            intermediate_size=96, max_position_embeddings=512, pad_token_id=0, bos_token_id=1, eos_token_id=2)

CASES: dict[str, dict] = {
    # Gemma 4: full layers at global_head_dim 32 with 1 KV head (k_eq_v); two layers read others' KV.
    "gemma4_text": dict(num_hidden_layers=6, sliding_window=32, global_head_dim=32, num_global_key_value_heads=1,
                        attention_k_eq_v=True, hidden_size_per_layer_input=8, vocab_size_per_layer_input=128,
                        num_kv_shared_layers=2, layer_types=["sliding_attention", "full_attention"] * 3),
    "gemma4-no-k_eq_v": dict(model_type="gemma4_text", num_hidden_layers=3, sliding_window=32, global_head_dim=32,
                             num_global_key_value_heads=1, hidden_size_per_layer_input=0),
    "lfm2": dict(num_hidden_layers=4, layer_types=["conv", "conv", "full_attention", "conv"]),
    "lfm2_moe": dict(num_hidden_layers=3, layer_types=["conv", "full_attention", "conv"], num_dense_layers=1,
                     num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32),
    "lfm3": dict(num_hidden_layers=4, sliding_window=32, conv_L_cache=5,
                 layer_types=["conv", "sliding_attention", "conv", "full_attention"]),
    "zamba2": dict(head_dim=None, num_hidden_layers=4, layers_block_type=["mamba", "hybrid", "mamba", "hybrid"],
                   mamba_d_state=8, n_mamba_heads=2, num_key_value_heads=4),
    "qwen3_5_text": dict(num_hidden_layers=4, linear_num_key_heads=2, linear_num_value_heads=4,
                         linear_key_head_dim=16, linear_value_head_dim=8),
    "mamba2": dict(num_hidden_layers=2, num_heads=8, head_dim=16, state_size=16, n_groups=2),
    # OLMo hybrid without layer_types: OlmoHybridConfig's own default (full where i % 4 == 3); no head_dim
    # key, so attention is hidden // heads = 16 (what vLLM's OlmoHybridAttention uses too).
    "olmo_hybrid": dict(head_dim=None, num_hidden_layers=4, linear_num_key_heads=2, linear_num_value_heads=4,
                        linear_key_head_dim=16, linear_value_head_dim=8),
    # LaraMini: LaraMiniConfig's period-5 pattern (delta net, sliding, delta net, full, sliding).
    "lara_mini": dict(num_hidden_layers=5, sliding_window=32, num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=32, shared_expert_intermediate_size=48, linear_num_key_heads=2,
                      linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8),
    # Qwen4-Exp: transformers always builds the QSA indexer on "indexed_attention" layers (its default
    # config, indexer_* null, cannot build the model), so it gets one; hkv reads the same dict without
    # the indexer keys (see WITHOUT_KEYS), as vLLM serves it: gated full attention + GDN.
    "qwen4_exp_text": dict(num_hidden_layers=4, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                           shared_expert_intermediate_size=48, linear_num_key_heads=2, linear_num_value_heads=4,
                           linear_key_head_dim=16, linear_value_head_dim=8, hc_count=2, hc_lowrank=8,
                           indexer_n_heads=2, indexer_kv_heads=1, indexer_head_dim=16, indexer_budget=8,
                           indexer_compress_ratio=4),
    "falcon_mamba": dict(num_hidden_layers=2, state_size=8),
}

# Keys hkv's copy of the config goes without: caches transformers needs to build the tiny model but
# whose extra index state hkv refuses (the K/V and recurrent layers compared are the same either way).
WITHOUT_KEYS: dict[str, tuple[str, ...]] = {
    "qwen4_exp_text": ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget",
                       "indexer_compress_ratio"),
}


def _config(case: str):
    overrides = dict(CASES[case])
    model_type = overrides.pop("model_type", case)
    kwargs = {**TINY, **overrides}
    return transformers.AutoConfig.for_model(model_type, **{k: v for k, v in kwargs.items() if v is not None})


def _transformers_cache(config) -> list[dict]:
    """What transformers cached per decoder layer: {"kv": (heads, head_dim)}, {"conv": (...), "ssm": (...)}."""
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        out = model(torch.arange(3, 12)[None], use_cache=True)
    cache = out.past_key_values if "past_key_values" in out else out.cache_params  # Mamba models: cache_params
    layers = []
    for layer in cache.layers:
        entry = {}
        keys = getattr(layer, "keys", None)
        if torch.is_tensor(keys):
            values = layer.values
            entry["kv"] = (keys.shape[1], keys.shape[3], values.shape[1], values.shape[3])
        conv = {k: v for k, v in (getattr(layer, "conv_states", None) or {}).items() if torch.is_tensor(v)}
        ssm = {k: v for k, v in (getattr(layer, "recurrent_states", None) or {}).items() if torch.is_tensor(v)}
        if conv:
            (conv_state,) = conv.values()
            entry["conv"] = (conv_state.shape[1], conv_state.shape[2])  # (channels, kernel)
        if ssm:
            (ssm_state,) = ssm.values()
            entry["ssm"] = tuple(ssm_state.shape[1:])
        layers.append(entry)
    return layers


def _hkv_cache(spec) -> list[dict]:
    layers: list[dict] = [{} for _ in range(spec.num_hidden_layers)]
    for desc in spec.cache_layers:
        entry = layers[desc.layer_idx]
        if isinstance(desc, AttentionDesc):
            entry["kv"] = (desc.num_kv_heads, desc.head_dim, desc.num_kv_heads, desc.head_dim_v)
            if desc.kv_shared_with is not None:
                entry["shared_with"] = desc.kv_shared_with
        else:
            assert isinstance(desc, RecurrentDesc)
            state = desc.cache_spec(CacheOptions(tp=1))
            conv_rows, conv_channels = state.shapes[0] if desc.conv_kernel_len > 1 else (None, None)
            if conv_rows is not None:
                entry["conv"] = (conv_channels, conv_rows + 1)
            if desc.ssm_dims:
                entry["ssm"] = state.shapes[-1]
    return layers


@pytest.mark.parametrize("case", sorted(CASES))
def test_cache_geometry_equals_transformers(case: str) -> None:
    config = _config(case)
    theirs = _transformers_cache(config)
    raw = {k: v for k, v in config.to_dict().items() if k not in WITHOUT_KEYS.get(case, ())}
    ours = _hkv_cache(from_hf_config(raw, case))
    assert len(ours) == len(theirs)
    for idx, (mine, their) in enumerate(zip(ours, theirs)):
        target = mine.pop("shared_with", None)
        if target is not None:  # no pages of its own, in both; the target keeps its KV for it
            assert their == {}, f"{case} layer {idx}: transformers caches {their} for a shared layer"
            assert config.kv_sharing_modes[target] == "store", f"{case} layer {idx} reads layer {target}"
            continue
        assert mine == their, f"{case} layer {idx}: hkv {mine} vs transformers {their}"


def test_a_wrong_head_dim_is_caught() -> None:
    """The comparison fails when hkv reads Gemma 4's full layers at the sliding head size."""
    config = _config("gemma4-no-k_eq_v")
    broken = config.to_dict()
    broken.pop("per_layer_config")
    broken["global_head_dim"] = 16  # what a reader that ignores per-layer geometry would use
    ours = _hkv_cache(from_hf_config(broken, "broken"))
    assert ours != _transformers_cache(config)
