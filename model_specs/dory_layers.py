"""Dory (vLLM 0.33 model_executor/models/dory.py, transformers_utils/configs/dory.py): attention /
MLP layers whose middle `n_recurrent_layers` run `n_recurrent_loops` times.

With `recurrent_kv_cache_mode == "per_loop"` (DoryConfig's default) every attention layer of the
recurrent block owns one cache per loop (dory.py l.109-131: `Attention` modules at the virtual index
loop x num_hidden_layers + layer, LoopCoder's numbering), built right after one another; in
"last_loop" mode every loop overwrites one cache. Input and output layers run once: one cache.
"""

from __future__ import annotations

from dataclasses import replace

from hkv.model_specs.attention_dims import attention_desc, attention_dims
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_desc import CacheLayer
from hkv.model_specs.layer_kinds import LayerKind, LayerTypeList
from hkv.model_specs.layer_rules import explicit_layer_types

_KV_CACHE_MODES = ("per_loop", "last_loop")


def dory_layer_types(view: ConfigView, n: int) -> LayerTypeList:
    """layer_types, else DoryConfig.__post_init__'s default: odd layers "mlp", i % 8 == 6 full, others sliding."""
    return explicit_layer_types(view, n) or LayerTypeList("model_type", tuple(
        "mlp" if i % 2 else "full_attention" if i % 8 == 6 else "sliding_attention" for i in range(n)))


def _loops_per_layer(view: ConfigView, n: int) -> list[int]:
    """How many caches each layer's attention owns (1 outside the recurrent block or in last_loop mode)."""
    mode = view.value("recurrent_kv_cache_mode", "per_loop")
    if mode not in _KV_CACHE_MODES:
        raise InvalidConfigError(f"recurrent_kv_cache_mode {mode!r} must be one of {', '.join(_KV_CACHE_MODES)}")
    loops = view.int_value("n_recurrent_loops", 1, why="DoryConfig default")
    n_in = view.int_value("n_input_layers", 0, why="DoryConfig default")
    n_out = view.int_value("n_output_layers", 0, why="DoryConfig default")
    n_rec = view.get("n_recurrent_layers")
    n_rec = n - n_in - n_out if n_rec is None else int(n_rec)
    if loops < 1 or min(n_in, n_out, n_rec) < 0 or n_in + n_rec + n_out != n:
        raise InvalidConfigError(f"Dory needs n_recurrent_loops >= 1 and n_input_layers + n_recurrent_layers + "
                                 f"n_output_layers == num_hidden_layers ({n_in} + {n_rec} + {n_out} != {n})")
    per_loop = loops if mode == "per_loop" else 1
    return [per_loop if n_in <= i < n_in + n_rec else 1 for i in range(n)]


def dory_cache_layers(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...],
                      model_dtype: int) -> tuple[CacheLayer, ...]:
    """Each attention layer's cache, then its loop copies at vLLM's virtual indices, in build order."""
    n = len(kinds)
    dims = attention_dims(view)
    layers: list[CacheLayer] = []
    for idx, (layer_kinds, loops) in enumerate(zip(kinds, _loops_per_layer(view, n))):
        for kind in layer_kinds:
            desc = attention_desc(view, dims, idx, kind)
            layers.extend(replace(desc, layer_idx=loop * n + idx) for loop in range(loops))
    return tuple(layers)
