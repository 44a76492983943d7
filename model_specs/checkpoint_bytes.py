"""A checkpoint's exact bytes, split into the parts vLLM treats differently (checkpoint_parts.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from hkv.model_specs.checkpoint_parts import PARTS, tensor_part
from hkv.model_specs.tensor_entry import TensorEntry


@dataclass(frozen=True)
class CheckpointBytes:
    """Bytes from safetensors headers. `parts`: (part, bytes) in PARTS order, parts with no tensor
    left out; they add up to `total_bytes`. `source`: "hub" (headers read over HTTP) or "local"."""

    total_bytes: int
    parts: tuple[tuple[str, int], ...]
    source: str

    @classmethod
    def from_tensors(cls, tensors: Iterable[TensorEntry], num_hidden_layers: int,
                     source: str) -> CheckpointBytes:
        by_part: Counter[str] = Counter()
        for tensor in tensors:
            by_part[tensor_part(tensor.name, num_hidden_layers)] += tensor.nbytes
        parts = tuple((p, by_part[p]) for p in PARTS if by_part[p])
        return cls(sum(by_part.values()), parts, source)

    @property
    def bytes_by_part(self) -> dict[str, int]:
        return dict(self.parts)

    def part_bytes(self, part: str) -> int:
        """Bytes of `part` (one of checkpoint_parts.PARTS); 0 when the checkpoint has none."""
        return self.bytes_by_part.get(part, 0)
