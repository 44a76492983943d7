"""Exact weight bytes of a checkpoint, tensor by tensor, from safetensors headers, without reading any
tensor data.

A .safetensors file starts with an 8-byte little-endian header length N, then N bytes of JSON:
{"<tensor>": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}.
"""

from __future__ import annotations

import json
import struct
from math import prod
from pathlib import Path

from hkv.model_specs.dtypes import safetensors_dtype_bytes
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.tensor_entry import TensorEntry

INDEX_FILE = "model.safetensors.index.json"
_MAX_HEADER_BYTES = 100 * 2**20  # the format caps headers at 100 MB


def tensors_in_file(path: Path) -> tuple[TensorEntry, ...]:
    """Every tensor named in the header of one .safetensors file, in header order."""
    with path.open("rb") as f:
        raw_len = f.read(8)
        if len(raw_len) != 8:
            raise InvalidConfigError(f"{path}: shorter than the 8-byte safetensors header length")
        (header_len,) = struct.unpack("<Q", raw_len)
        if header_len > _MAX_HEADER_BYTES:
            raise InvalidConfigError(
                f"{path}: header length {header_len} exceeds 100 MB; not a safetensors file")
        raw_header = f.read(header_len)
    try:
        header = json.loads(raw_header)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidConfigError(f"{path}: safetensors header is not valid JSON") from None
    return tensors_in_header(header, str(path))


def tensors_in_header(header: object, label: str) -> tuple[TensorEntry, ...]:
    """The tensors of a decoded safetensors header (local file or one read from the Hub); `label`
    names the file in errors."""
    if not isinstance(header, dict):
        raise InvalidConfigError(f"{label}: safetensors header must be a JSON object")
    return tuple(_entry(label, name, entry) for name, entry in header.items() if name != "__metadata__")


def tensor_bytes_in_file(path: Path) -> int:
    """Sum over tensors of numel x element size, read from the header of one .safetensors file."""
    return sum(t.nbytes for t in tensors_in_file(path))


def _entry(label: str, name: str, entry: object) -> TensorEntry:
    if not isinstance(entry, dict) or "dtype" not in entry or "shape" not in entry:
        raise InvalidConfigError(f"{label}: tensor {name!r} lacks dtype/shape in the safetensors header")
    dtype, shape = str(entry["dtype"]), tuple(int(d) for d in entry["shape"])
    return TensorEntry(name, dtype, shape, _entry_bytes(label, name, dtype, shape, entry.get("data_offsets")))


def _entry_bytes(label: str, name: str, dtype: str, shape: tuple[int, ...], offsets: object) -> int:
    element_bytes = safetensors_dtype_bytes(dtype)
    if element_bytes is not None:
        return prod(shape) * element_bytes
    if isinstance(offsets, (list, tuple)) and len(offsets) == 2:
        return int(offsets[1]) - int(offsets[0])  # sub-byte dtypes (e.g. F4): the stored byte span
    raise InvalidConfigError(f"{label}: tensor {name!r} has dtype {dtype!r} of unknown size "
                             "and no data_offsets")


def checkpoint_files(directory: Path, *, partial_ok: bool = False) -> list[Path]:
    """The shards named by model.safetensors.index.json, else every *.safetensors in `directory`.
    `partial_ok`: a folder that may hold only some shards (an HF cache snapshot of a repo whose
    config was fetched alone) gives [] when one is missing, rather than an error."""
    index = directory / INDEX_FILE
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError):
            raise InvalidConfigError(f"{index}: expected a JSON object with a 'weight_map'") from None
        names = sorted(set(weight_map.values()))
        missing = [n for n in names if not (directory / n).is_file()]
        if missing and partial_ok:
            return []
        if missing:
            raise InvalidConfigError(f"{index} names shards that are not present: {', '.join(missing[:3])}")
        return [directory / n for n in names]
    return sorted(directory.glob("*.safetensors"))


def checkpoint_tensors(directory: Path, *, partial_ok: bool = False) -> tuple[TensorEntry, ...] | None:
    """Every tensor of the checkpoint in `directory`; None when it has no safetensors (or, with
    `partial_ok`, not all of them: see checkpoint_files)."""
    files = checkpoint_files(directory, partial_ok=partial_ok)
    return tuple(t for f in files for t in tensors_in_file(f)) if files else None


def checkpoint_weights_bytes(directory: Path) -> int | None:
    """Exact bytes of all tensors of the checkpoint in `directory`; None when it has no safetensors."""
    tensors = checkpoint_tensors(directory)
    return None if tensors is None else sum(t.nbytes for t in tensors)
