"""What hkv keeps of a Hub repo: its config and the header entry of every safetensors tensor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.tensor_entry import TensorEntry

CACHE_FORMAT = 1  # bump when the JSON below changes; older files are then fetched again


@dataclass(frozen=True)
class HubCheckpoint:
    """`tensors` is None when the repo has no safetensors (e.g. only .bin or GGUF files)."""

    model_id: str  # as the user typed it, e.g. "Qwen/Qwen3-32B-AWQ"
    revision: str  # what was asked for, e.g. "main"
    commit: str  # the commit the Hub resolved it to
    config: Mapping[str, Any]
    tensors: tuple[TensorEntry, ...] | None

    def to_json(self) -> dict[str, Any]:
        tensors = None if self.tensors is None else {
            t.name: [t.dtype, list(t.shape), t.nbytes] for t in self.tensors}
        return {"format": CACHE_FORMAT, "model_id": self.model_id, "revision": self.revision,
                "commit": self.commit, "config": dict(self.config), "tensors": tensors}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], label: str) -> HubCheckpoint:
        """Inverse of to_json; InvalidConfigError (naming `label`) for anything else."""
        try:
            raw = doc["tensors"]
            tensors = None if raw is None else tuple(
                TensorEntry(name, str(dtype), tuple(int(d) for d in shape), int(nbytes))
                for name, (dtype, shape, nbytes) in raw.items())
            config = doc["config"]
            if not isinstance(config, Mapping):
                raise TypeError("config")
            return cls(str(doc["model_id"]), str(doc["revision"]), str(doc["commit"]), config, tensors)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise InvalidConfigError(f"{label}: not an hkv hub cache file; delete it to fetch again") \
                from None
