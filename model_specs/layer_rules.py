"""Per-family rules that name every layer's type (see layer_kinds.py for the vocabulary).

Every rule reads an explicit list first (`layer_types` / `layers_block_type`, as transformers
writes it, or a catalog `_assumed_layer_types` annotation), and only then the family's own
convention, mirroring the transformers config class's `__post_init__` default.
"""

from __future__ import annotations

from collections.abc import Callable

from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.indexer_cache import indexer_sharing_layers
from hkv.model_specs.layer_kinds import LayerTypeList
from hkv.model_specs.mimo_v2_layers import mimo_v2_layer_type_names
from hkv.model_specs.nemotron_nas_layers import layer_type_names

LayerRule = Callable[[ConfigView, int], LayerTypeList]

_EXPLICIT_KEYS = ("layer_types", "layers_block_type")

# Nemotron-H's hybrid_override_pattern characters.
_PATTERN_CHARS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


def explicit_layer_types(view: ConfigView, num_layers: int | None) -> LayerTypeList | None:
    """The config's own per-layer list, else the catalog's `_assumed_layer_types`, else None."""
    for key in _EXPLICIT_KEYS:
        if view.has(key):
            return _checked_list(view.get(key), key, num_layers)
    assumed = view.values.get("_assumed_layer_types")
    if assumed is not None:
        view.note("layer positions assumed by the catalog annotation _assumed_layer_types")
        return _checked_list(assumed, "_assumed_layer_types", num_layers)
    return None


def _checked_list(raw: object, key: str, num_layers: int | None) -> LayerTypeList:
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise InvalidConfigError(f"{key} must be a list of layer-type strings, got {type(raw).__name__}")
    if num_layers is not None and len(raw) != num_layers:
        raise InvalidConfigError(f"{key} has {len(raw)} entries but num_hidden_layers is {num_layers}")
    return LayerTypeList(key, tuple(raw))


def _every(pattern: Callable[[int], str], attribute: str, num_layers: int) -> LayerTypeList:
    return LayerTypeList(attribute, tuple(pattern(i) for i in range(num_layers)))


def all_full(view: ConfigView, n: int) -> LayerTypeList:
    return explicit_layer_types(view, n) or _every(lambda i: "full_attention", "model_type", n)


def all_mamba(view: ConfigView, n: int) -> LayerTypeList:
    """Pure state-space models (Mamba, Mamba2, Falcon-Mamba): every layer one recurrent mixer."""
    return _every(lambda i: "mamba", "model_type", n)


def all_sliding(view: ConfigView, n: int) -> LayerTypeList:
    """Beam (vLLM 0.33 transformers_utils/configs/beam.py): layer_types, else every layer sliding
    (BeamConfig's default when layer_types is None)."""
    return explicit_layer_types(view, n) or _every(lambda i: "sliding_attention", "model_type", n)


def muse_spark_layers(view: ConfigView, n: int) -> LayerTypeList:
    """Muse Spark (vLLM 0.33 models/muse_spark): MuseSparkTextConfig has no defaults and requires one
    full / sliding layer_types entry per layer. A gated_delta_net.enable config is refused, as vLLM
    0.33 refuses it (nvidia/model.py l.1774: "not supported by the native vLLM text stack")."""
    if (view.get("gated_delta_net") or {}).get("enable"):
        raise InvalidConfigError(
            f"model_type {view.family!r} sets gated_delta_net.enable: vLLM 0.33 refuses it (MuseSpark1x "
            "gated_delta_net layers are not supported by the native vLLM text stack), so hkv does not plan it; "
            "use a config with gated_delta_net.enable false")
    return listed_layer_types(view, n)


def alice_ai_layers(view: ConfigView, n: int) -> LayerTypeList:
    """AliceAI (vLLM 0.33 models/alice_ai.py): layer i is config.layer_types[i], "full_attention"
    (Qwen3-Next gated attention) or "linear_attention" (Kimi delta attention). 0.33 has no config class
    (remote code), so no default list exists; the KDA adapter (l.118-127) refuses unequal key / value
    heads or head dims, and so does hkv."""
    pairs = (("linear_num_key_heads", "linear_num_value_heads"), ("linear_key_head_dim", "linear_value_head_dim"))
    for key, value in pairs:
        if view.get(key) != view.get(value):
            raise InvalidConfigError(f"model_type {view.family!r}: {key} {view.get(key)} != {value} "
                                     f"{view.get(value)}; vLLM 0.33's AliceAI KDA requires them equal")
    return listed_layer_types(view, n)


def alternating_sliding(view: ConfigView, n: int) -> LayerTypeList:
    """Gemma 2 / gpt-oss: even layers sliding, odd layers full."""
    return explicit_layer_types(view, n) or _every(
        lambda i: "sliding_attention" if (i + 1) % 2 else "full_attention", "model_type", n)


def sliding_window_pattern(view: ConfigView, n: int) -> LayerTypeList:
    """Gemma 3 / Cohere2: every N-th layer ((i+1) % N == 0) full, the others sliding."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    # transformers 5 re-saves the legacy int as `_sliding_window_pattern`; either spelling counts.
    legacy_only = view.has("_sliding_window_pattern") and not view.has("sliding_window_pattern")
    key = "_sliding_window_pattern" if legacy_only else "sliding_window_pattern"
    period = view.int_value(key)
    if period < 1:
        raise InvalidConfigError(f"{key}={period} must be >= 1")
    return _every(lambda i: "sliding_attention" if (i + 1) % period else "full_attention", key, n)


def window_covers_context(view: ConfigView, n: int) -> LayerTypeList:
    """Mistral: one `sliding_window` for all layers; none, or one >= the context, is full attention."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    window = view.get("sliding_window")
    max_len = view.get("max_position_embeddings")
    if window is None:
        return _every(lambda i: "full_attention", "sliding_window", n)
    if max_len is not None and window >= max_len:
        view.note(f"sliding_window {window} >= max_position_embeddings {max_len}: treated as full attention")
        return _every(lambda i: "full_attention", "sliding_window", n)
    return _every(lambda i: "sliding_attention", "sliding_window", n)


def qwen_window_layers(view: ConfigView, n: int) -> LayerTypeList:
    """Qwen 2/3: sliding only with use_sliding_window, and only for layers >= max_window_layers."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    if not view.value("use_sliding_window", False) or view.get("sliding_window") is None:
        return _every(lambda i: "full_attention", "use_sliding_window", n)
    first = view.int_value("max_window_layers")
    return _every(lambda i: "sliding_attention" if i >= first else "full_attention", "max_window_layers", n)


def llama4_nope_layers(view: ConfigView, n: int) -> LayerTypeList:
    """Llama 4: RoPE layers (no_rope_layers[i] == 1) are chunked, NoPE layers (0) full."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    flags = view.get("no_rope_layers")
    if flags:  # an empty list means "use the interval", as in Llama4TextConfig
        if len(flags) != n or any(f not in (0, 1) for f in flags):
            raise InvalidConfigError(f"no_rope_layers must be {n} flags of 0/1, got {flags!r}")
        return LayerTypeList("no_rope_layers", tuple(
            "chunked_attention" if f else "full_attention" for f in flags))
    interval = view.int_value("no_rope_layer_interval")
    return _every(lambda i: "chunked_attention" if (i + 1) % interval else "full_attention",
                  "no_rope_layer_interval", n)


def full_attention_interval(view: ConfigView, n: int) -> LayerTypeList:
    """Qwen3-Next: every `full_attention_interval`-th layer full, the others gated delta-net."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    interval = view.int_value("full_attention_interval")
    return _every(lambda i: "linear_attention" if (i + 1) % interval else "full_attention",
                  "full_attention_interval", n)


def olmo_hybrid_layers(view: ConfigView, n: int) -> LayerTypeList:
    """OLMo hybrid: layer_types, else OlmoHybridConfig's default: full attention where i % 4 == 3,
    gated delta-net elsewhere, and the last layer full when that leaves none."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    names = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(n)]
    if names and "full_attention" not in names:
        names[-1] = "full_attention"
    return LayerTypeList("model_type", tuple(names))


def lara_mini_layers(view: ConfigView, n: int) -> LayerTypeList:
    """LaraMini: layer_types, else LaraMiniConfig's released period-5 pattern (gated delta-net,
    sliding, gated delta-net, full, sliding)."""
    pattern = ("linear_attention", "sliding_attention", "linear_attention", "full_attention", "sliding_attention")
    return explicit_layer_types(view, n) or _every(lambda i: pattern[i % len(pattern)], "model_type", n)


# Qwen4-Exp's QSA keys: with any of them set, "indexed_attention" layers keep index caches.
_QSA_KEYS = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget", "indexer_compress_ratio")


def qwen4_exp_layers(view: ConfigView, n: int) -> LayerTypeList:
    """Qwen4-Exp: gated delta-net + "indexed_attention" (Qwen4ExpTextConfig renames the checkpoint's
    "full_attention"; default every 4th layer). Without indexer_* keys vLLM builds those layers as
    Qwen3-Next gated full attention (nvidia/model.py: `use_qsa = indexer_n_heads is not None`).
    QSA's ring of raw index keys and its compressed keys, and the PLE layers' dilated short-conv
    state, are caches hkv does not model, so configs that enable them are refused."""
    qsa = [key for key in _QSA_KEYS if view.has(key)]
    if qsa:
        raise InvalidConfigError(
            f"model_type {view.family!r} sets {', '.join(qsa)}: its indexed_attention layers use QSA, which "
            "vLLM caches as a circular buffer of raw index keys plus one compressed key per "
            "indexer_compress_ratio tokens; hkv does not model that cache yet, so it cannot plan this model")
    if view.get("ple_layer_ids"):
        raise InvalidConfigError(
            f"model_type {view.family!r} sets ple_layer_ids: vLLM keeps a dilated short-conv state over "
            "hc_count x hidden_size channels for those layers (a second recurrent spec); hkv does not "
            "model it yet, so it cannot plan this model")
    explicit = explicit_layer_types(view, n)
    if explicit is None:
        interval = view.int_value("full_attention_interval", 4, why="Qwen4ExpTextConfig default")
        return _every(lambda i: "linear_attention" if (i + 1) % interval else "full_attention",
                      "full_attention_interval", n)
    return LayerTypeList(explicit.attribute, tuple(
        "full_attention" if name == "indexed_attention" else name for name in explicit.names))


# MiniMax-M3: vLLM 0.32 / 0.33's MiniMaxM3TextConfig default when the config has no
# sparse_attention_config (the MiniMax-M3-preview layout: 3 dense-attention layers, then 57 sparse).
_M3_DEFAULT_DENSE_LAYERS = 3


def _minimax_m3_sparse_layers(view: ConfigView, names: tuple[str, ...] | None, n: int) -> list[int]:
    """Layers that run MiniMax-M3's block-sparse attention: transformers' "minimax_m3_sparse" layer
    type, else vLLM's sparse_attention_config.sparse_attention_freq (nonzero entries; vLLM's config
    class supplies the preview's default when the key is absent)."""
    listed = set() if names is None else {i for i, name in enumerate(names) if name == "minimax_m3_sparse"}
    if view.has("sparse_attention_config"):
        freq = (view.get("sparse_attention_config") or {}).get("sparse_attention_freq")
        if freq is not None and not isinstance(freq, list):
            raise InvalidConfigError(f"sparse_attention_config.sparse_attention_freq must be a list of 0/1 per "
                                     f"layer, got {freq!r}")
        configured = set() if freq is None else {i for i, f in enumerate(freq[:n]) if f != 0}
    else:
        configured = set() if names is not None else set(range(_M3_DEFAULT_DENSE_LAYERS, n))
    return sorted(listed | configured)


def minimax_m3_layers(view: ConfigView, n: int) -> LayerTypeList:
    """MiniMax-M3: GQA attention on every layer; vLLM (0.32 / 0.33 models/minimax_m3/nvidia/model.py,
    MiniMaxM3DecoderLayer) runs its sparse layers as MiniMaxM3SparseAttention, which caches beside the
    K/V an index key per token (MiniMaxM3IndexerCache, model_specs/indexer_cache.py): those layers are
    "minimax_m3_sparse" (transformers' own name for them), the others "full_attention"."""
    explicit = explicit_layer_types(view, n)
    names = explicit.names if explicit is not None else ("full_attention",) * n
    sparse = set(_minimax_m3_sparse_layers(view, None if explicit is None else explicit.names, n))
    return LayerTypeList(explicit.attribute if explicit is not None else "sparse_attention_config", tuple(
        "minimax_m3_sparse" if i in sparse else name for i, name in enumerate(names)))


def minimax_attn_type_list(view: ConfigView, n: int) -> LayerTypeList:
    """MiniMax: attn_type_list 1 = softmax (full) attention, 0 = lightning (linear) attention."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    flags = view.get("attn_type_list")
    if flags is None:
        view.note("attn_type_list absent: used MiniMaxConfig's default (even layers full, odd lightning)")
        return _every(lambda i: "full_attention" if (i + 1) % 2 else "linear_attention", "model_type", n)
    if len(flags) != n:
        raise InvalidConfigError(f"attn_type_list has {len(flags)} entries but num_hidden_layers is {n}")
    names = {1: "full_attention", 0: "linear_attention"}
    for idx, flag in enumerate(flags):
        if flag not in names:
            raise InvalidConfigError(
                f"attn_type_list[{idx}] = {flag!r} is not a known layer kind; expected 0 or 1")
    return LayerTypeList("attn_type_list", tuple(names[f] for f in flags))


def minimax_m2_layers(view: ConfigView, n: int) -> LayerTypeList:
    """MiniMax-M2 / M2.1 / M2.5 / M2.7: softmax (full) attention on every layer. vLLM's
    MiniMaxM2DecoderLayer (models/minimax_m2.py) builds MiniMaxM2Attention without a window and never
    reads attn_type_list; the released configs list 1 (softmax) for every layer. A 0 there (MiniMax-M1's
    lightning attention) is a layer that architecture has no module for, so it is refused."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    flags = view.get("attn_type_list")
    if flags is not None:
        if not isinstance(flags, list) or len(flags) != n:
            raise InvalidConfigError(
                f"attn_type_list must list {n} entries (num_hidden_layers), got {flags!r}")
        lightning = [idx for idx, flag in enumerate(flags) if flag != 1]
        if lightning:
            idx = lightning[0]
            raise InvalidConfigError(
                f"attn_type_list[{idx}] = {flags[idx]!r} in model_type {view.family!r}: MiniMaxM2ForCausalLM "
                "has softmax attention on every layer (vLLM's minimax_m2.py has no lightning attention; "
                "MiniMax-M1 is model_type minimax), so hkv cannot plan this model")
    return _every(lambda i: "full_attention", "attn_type_list" if flags is not None else "model_type", n)


def nemotron_nas_layers(view: ConfigView, n: int) -> LayerTypeList:
    """Nemotron-NAS / DeciLM: attention unless block_configs[i].attention.no_op (nemotron_nas_layers.py)."""
    return LayerTypeList("block_configs", layer_type_names(view, n))


def mimo_v2_layers(view: ConfigView, n: int) -> LayerTypeList:
    """MiMo-V2-Flash: hybrid_layer_pattern[i] 1 = sliding, 0 = full (mimo_v2_layers.py)."""
    return LayerTypeList("hybrid_layer_pattern", mimo_v2_layer_type_names(view, n))


def attention_indices(view: ConfigView, n: int) -> LayerTypeList:
    """Bamba: attention at `attn_layer_indices`, Mamba2 everywhere else."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    indices = _layer_indices(view.get("attn_layer_indices") or [], "attn_layer_indices", n)
    return _every(lambda i: "full_attention" if i in indices else "mamba", "attn_layer_indices", n)


def _layer_indices(indices: list, attribute: str, n: int) -> set[int]:
    bad = [i for i in indices if not isinstance(i, int) or not 0 <= i < n]
    if bad:
        raise InvalidConfigError(f"{attribute} contains {bad!r}, outside 0..{n - 1}")
    return set(indices)


# Why vLLM cannot serve such a config either, where that is known.
_UNLISTED_IN_VLLM = {
    "lfm2_moe": "vLLM 0.32's Lfm2MoeForCausalLM builds layer i from config.layer_types[i] and "
                "Lfm2MoeConfig derives no list (full_attn_idxs is not read), so vLLM cannot load it either",
}


def listed_layer_types(view: ConfigView, n: int) -> LayerTypeList:
    """Families whose config always lists its layers (Zamba2, Bailing hybrid, LFM2-MoE, LFM3):
    without the list nothing tells the recurrent layers from the attention ones."""
    explicit = explicit_layer_types(view, n)
    if explicit is None:
        why = _UNLISTED_IN_VLLM.get(view.family)
        raise InvalidConfigError(f"model_type {view.family!r} needs layer_types (which layers are attention, "
                                 "which recurrent); the config has none" + (f": {why}" if why else ""))
    return explicit


def lfm2_layers(view: ConfigView, n: int) -> LayerTypeList:
    """LFM2: layer_types, else full attention at `full_attn_idxs` (Lfm2Config's fallback: every layer
    when that is absent too) and short conv everywhere else."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    if view.get("full_attn_idxs") is None:
        view.note("layer_types and full_attn_idxs absent: every layer full attention (Lfm2Config's default)")
        return _every(lambda i: "full_attention", "model_type", n)
    indices = _layer_indices(view.get("full_attn_idxs"), "full_attn_idxs", n)
    return _every(lambda i: "full_attention" if i in indices else "conv", "full_attn_idxs", n)


def granite_hybrid(view: ConfigView, n: int) -> LayerTypeList:
    """Granite-4 hybrid: `layer_types` ("mamba"/"attention"); absent means all Mamba2 (class default)."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    view.note("layer_types absent: used GraniteMoeHybridConfig's default (every layer Mamba2)")
    return _every(lambda i: "mamba", "model_type", n)


def period_offset(view: ConfigView, n: int) -> LayerTypeList:
    """Jamba: attention where i % attn_layer_period == attn_layer_offset, Mamba1 elsewhere."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    period = view.int_value("attn_layer_period")
    offset = view.int_value("attn_layer_offset")
    if not 0 <= offset < period:
        raise InvalidConfigError(
            f"attn_layer_offset={offset} must be in 0..attn_layer_period-1 ({period - 1})")
    return _every(lambda i: "full_attention" if i % period == offset else "mamba", "attn_layer_period", n)


def every_layer_hybrid(view: ConfigView, n: int) -> LayerTypeList:
    """Falcon-H1: each layer runs attention and a Mamba2 mixer in parallel."""
    return explicit_layer_types(view, n) or _every(lambda i: "hybrid", "model_type", n)


def gemma3n_pattern(view: ConfigView, n: int) -> LayerTypeList:
    """Gemma 3n: full attention where (i+1) % 5 == 0 (Gemma3nTextConfig default), sliding elsewhere."""
    return explicit_layer_types(view, n) or _every(
        lambda i: "full_attention" if (i + 1) % 5 == 0 else "sliding_attention", "model_type", n)


def gemma4_pattern(view: ConfigView, n: int) -> LayerTypeList:
    """Gemma 4: layer_types, else every 6th layer full (Gemma4TextConfig's 5:1 default); the last
    layer is always full (the config class forces it)."""
    names = list((explicit_layer_types(view, n) or _every(
        lambda i: "full_attention" if (i + 1) % 6 == 0 else "sliding_attention", "model_type", n)).names)
    if names and names[-1] != "full_attention":
        view.note(f"layer {n - 1} is {names[-1]} in the config; Gemma4TextConfig forces the last layer to "
                  "full_attention, and so does hkv")
        names[-1] = "full_attention"
    return LayerTypeList("layer_types" if view.get("layer_types") else "model_type", tuple(names))


def kimi_linear_layers(view: ConfigView, n: int) -> LayerTypeList:
    """Kimi-Linear: linear_attn_config lists 1-based full_attn_layers (MLA) and kda_layers."""
    explicit = explicit_layer_types(view, n)
    if explicit:
        return explicit
    cfg = view.get("linear_attn_config") or {}
    full, kda = cfg.get("full_attn_layers"), cfg.get("kda_layers")
    if full is None or kda is None:
        view.note("linear_attn_config lacks full_attn_layers/kda_layers: used KimiLinearConfig's default")
        return _every(lambda i: "full_attention" if i and i % 4 == 0 else "linear_attention", "model_type", n)
    names: list[str | None] = [None] * n
    for one_based in full:
        names[_zero_based(one_based, "linear_attn_config.full_attn_layers", n)] = "full_attention"
    for one_based in kda:
        names[_zero_based(one_based, "linear_attn_config.kda_layers", n)] = "linear_attention"
    missing = [i + 1 for i, name in enumerate(names) if name is None]
    if missing:
        raise InvalidConfigError(f"linear_attn_config leaves layers {missing} (1-based) in neither list")
    return LayerTypeList("linear_attn_config", tuple(names))  # type: ignore[arg-type]


def _zero_based(one_based: object, attribute: str, n: int) -> int:
    if not isinstance(one_based, int) or not 1 <= one_based <= n:
        raise InvalidConfigError(f"{attribute} contains {one_based!r}, outside the 1-based range 1..{n}")
    return one_based - 1


_DSA_LAYER_NAMES = frozenset({"indexed_attention", "deepseek_sparse_attention"})  # older configs: the latter


def dsa_layers(view: ConfigView, n: int) -> LayerTypeList:
    """DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5, Hunyuan-V4): every layer "indexed_attention"
    (MLA + an indexer key cache, the config classes' default), except the layers that reuse another
    layer's top-k (IndexCache, indexer_cache.py), which cache the MLA latent only."""
    names = (explicit_layer_types(view, n) or _every(lambda i: "indexed_attention", "model_type", n))
    shared = indexer_sharing_layers(view, n)
    return LayerTypeList(names.attribute, tuple(
        "full_attention" if name in _DSA_LAYER_NAMES and i in shared else name
        for i, name in enumerate(names.names)))


def nemotron_layer_types(view: ConfigView) -> LayerTypeList:
    """Nemotron-H: the per-layer list or hybrid_override_pattern; its length defines the layer count."""
    explicit = explicit_layer_types(view, None)
    if explicit is None:
        pattern = view.get("hybrid_override_pattern")
        if not isinstance(pattern, str):
            raise InvalidConfigError("nemotron_h config lacks hybrid_override_pattern and layers_block_type")
        for idx, char in enumerate(pattern):
            if char not in _PATTERN_CHARS:
                raise InvalidConfigError(
                    f"hybrid_override_pattern[{idx}] = {char!r} is not a known layer kind; expected one of: "
                    + ", ".join(f"{c!r} ({n})" for c, n in _PATTERN_CHARS.items()))
        explicit = LayerTypeList("hybrid_override_pattern", tuple(_PATTERN_CHARS[c] for c in pattern))
    declared = view.get("num_hidden_layers")
    if declared is not None and declared != len(explicit.names):
        # transformers deprecates num_hidden_layers for NemotronH and uses the list length.
        view.note(f"num_hidden_layers {declared} != {len(explicit.names)} entries of {explicit.attribute}: "
                  "used the list")
    return explicit
