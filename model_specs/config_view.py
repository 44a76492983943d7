"""A read-only view of an HF config dict that records every value it had to assume.

Multimodal wrappers (Gemma 3, Llama 4, Gemma 3n) keep the language model in `text_config`; the view
merges it over the top level, so `view.get("hidden_size")` is the text model's value everywhere.

Lookup order of `value(key)`: the family's own spelling or rule for `key` (config_aliases.py), the
config itself, then a catalog annotation `_assumed_<key>`
(a value a person chose for a partial config, with its source in the catalog file), then the
family default (the transformers config-class default), then the caller's `default`. The last three
append a line to `notes`, which ends up in `ModelSpec.note`, so no assumption is silent; the only
exception is `quiet_keys`, bias switches whose class default moves the parameter count by a few
vectors per layer and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hkv.model_specs.config_aliases import key_rule
from hkv.model_specs.errors import InvalidConfigError

_MISSING = object()

# Names transformers' attribute_maps treat as one attribute; configs on the Hub use either spelling
# (e.g. Qwen3-MoE checkpoints write num_experts, transformers 5.x writes num_local_experts).
ATTRIBUTE_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("num_experts", "num_local_experts", "n_routed_experts"),
    ("n_shared_experts", "num_shared_experts"),
)
_SYNONYMS_OF = {name: group for group in ATTRIBUTE_SYNONYMS for name in group}


def merge_text_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level keys, overlaid by the keys of a nested `text_config` (the language model's own)."""
    merged = {k: v for k, v in config.items() if k != "text_config"}
    text = config.get("text_config")
    if isinstance(text, Mapping):
        merged.update(text)
    return merged


@dataclass(frozen=True)
class ConfigView:
    values: Mapping[str, Any]  # merged config (see merge_text_config)
    family: str  # normalized model_type that selects the family rules
    family_defaults: Mapping[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # assumptions made while reading, in order
    quiet_keys: frozenset[str] = frozenset()  # family defaults too minor to note (bias switches)

    def has(self, key: str) -> bool:
        """True when the config sets `key` (or a synonym of it) to a non-null value."""
        return self._raw(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        """The raw config value (null counts as absent); no fallback, no note."""
        value = self._raw(key)
        return default if value is None else value

    def _raw(self, key: str) -> Any:
        names = (key, *_SYNONYMS_OF.get(key, ()))
        for name in names:  # the family's own spelling or rule first (config_aliases.py)
            rule = key_rule(self.family, name)
            if rule is not None and (ruled := rule(self)) is not None:
                return ruled
        for name in names:
            if self.values.get(name) is not None:
                return self.values[name]
        return None

    def value(self, key: str, default: Any = _MISSING, *, why: str = "") -> Any:
        """The config value, else an annotated or family default (noted), else `default` (noted).

        Raises InvalidConfigError naming `key` when nothing supplies a value.
        """
        if self.has(key):
            return self._raw(key)
        assumed = self.values.get(f"_assumed_{key}")
        if assumed is not None:
            self.note(f"{key}={_short(assumed)} assumed by the catalog annotation _assumed_{key}")
            return assumed
        if self.family_defaults.get(key) is not None:
            fallback = self.family_defaults[key]
            if key not in self.quiet_keys:
                self.note(f"{key} absent: used the {self.family} default {_short(fallback)}")
            return fallback
        if default is not _MISSING:
            if why:
                self.note(f"{key} absent: used {_short(default)} ({why})")
            return default
        raise InvalidConfigError(
            f"config (model_type {self.family!r}) lacks {key!r}, which this family needs; "
            "add it to config.json"
        )

    def int_value(self, key: str, default: Any = _MISSING, *, why: str = "") -> int:
        raw = self.value(key, default, why=why)
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or int(raw) != raw:
            raise InvalidConfigError(f"{key}={raw!r} must be an integer")
        return int(raw)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
