"""Cross-layer KV sharing (Gemma 3n, Gemma 4): the last `num_kv_shared_layers` layers store no KV of their own.

Rule (transformers Gemma3nTextConfig.kv_sharing_modes, and vLLM's kv_sharing_target_layer_name):
a shared layer reads the KV of the last non-shared layer of the same attention type (sliding or
full) that comes before the shared range.
"""

from __future__ import annotations

from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_kinds import LayerKind

SHARING_FAMILIES = frozenset({"gemma3n_text", "gemma4_text"})


def kv_share_targets(view: ConfigView, kinds: tuple[tuple[LayerKind, ...], ...]) -> dict[int, int]:
    """{shared layer index: index of the layer whose KV it reads}; empty when nothing is shared."""
    if view.family not in SHARING_FAMILIES:
        return {}
    num_shared = view.int_value("num_kv_shared_layers")
    num_layers = len(kinds)
    if not 0 <= num_shared < num_layers:
        raise InvalidConfigError(f"num_kv_shared_layers={num_shared} must be in 0..{num_layers - 1}")
    first_shared = num_layers - num_shared
    targets: dict[int, int] = {}
    for idx in range(first_shared, num_layers):
        owners = [j for j in range(first_shared) if kinds[j] == kinds[idx]]
        if not owners:
            raise InvalidConfigError(
                f"layer {idx} shares KV but no layer before {first_shared} has its type "
                f"{kinds[idx][0].value}")
        targets[idx] = owners[-1]
    return targets
