"""Turn what a user typed (catalog name, HF id, directory, config.json path) into a ModelSpec.

Resolution order, first hit wins:
1. an existing path: a model directory (its config.json) or a JSON file;
2. an HF id (`org/name`, not a path): the Hub (hub/: config.json and safetensors headers, cached on
   disk by hkv so that later runs need no network); when the Hub cannot be asked (offline,
   HF_HUB_OFFLINE, unreachable, gated, missing) the local HF cache, then the catalog, and the spec's
   `source_note` says which, and why;
3. a catalog name: never goes online.
Weight bytes are exact, split by part (CheckpointBytes), whenever safetensors headers are at hand:
from the Hub, or shards next to a local config. Tensor data is never read or downloaded.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from hkv.model_specs.catalog import CatalogEntry, close_matches_hint, lookup_catalog
from hkv.model_specs.errors import SpecNotFoundError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.hf_cache import cached_snapshot, hub_cache_dir, looks_like_hf_id
from hkv.model_specs.json_file import read_json_object
from hkv.model_specs.model_spec import ModelSpec

if TYPE_CHECKING:
    from hkv.model_specs.tensor_entry import TensorEntry

# The Hub client and the safetensors readers are imported by the branches that read a checkpoint:
# a catalog name (the common `hkv plan gemma-3-27b`) needs neither, and a cold start pays for each.

_CONFIG_WEIGHTS = "weights computed from the config (no safetensors headers)"


def load_model_spec(arg: str, *, dtype_override: str | None = None) -> ModelSpec:
    """The ModelSpec `arg` names; `dtype_override` (e.g. "float16") replaces the config's weight dtype.

    Raises SpecNotFoundError when nothing matches and InvalidConfigError for unreadable configs.
    """
    path = Path(arg).expanduser()
    if path.exists():
        return _from_path(path, arg, dtype_override)
    if looks_like_hf_id(arg) and not _looks_like_path(arg):
        return _from_hub(arg, dtype_override)
    entry = lookup_catalog(arg)
    if entry is not None:
        return _from_catalog(entry, dtype_override)
    if _looks_like_path(arg):
        raise SpecNotFoundError(
            f"{arg}: no such file or directory; expected a model directory or config.json")
    raise SpecNotFoundError(f"{arg!r} is not a catalog name, a local path, or an HF id (org/name); "
                            f"{close_matches_hint(arg)}")


def _from_hub(model_id: str, dtype_override: str | None) -> ModelSpec:
    from hkv.model_specs.hub import HubUnavailable, load_hub_checkpoint

    try:
        checkpoint = load_hub_checkpoint(model_id)
    except HubUnavailable as failure:
        return _fallback(model_id, dtype_override, failure.reason)
    spec = from_hf_config(checkpoint.config, model_id, dtype_override=dtype_override, model_id=model_id,
                          source=f"hub:{model_id}@{checkpoint.commit}")
    return _with_tensors(spec, checkpoint.tensors, "hub")


def _fallback(model_id: str, dtype_override: str | None, reason: str) -> ModelSpec:
    """The HF cache's copy, else the catalog's, with a note saying why and what was used."""
    snapshot = cached_snapshot(model_id)
    if snapshot is not None:
        spec = _from_directory(snapshot, model_id, dtype_override, model_id=model_id,
                               source=f"hf-cache:{snapshot}", partial_ok=True)
        weights = ("weights from its safetensors headers" if spec.checkpoint_bytes is not None
                   else _CONFIG_WEIGHTS)
        return replace(spec, source_note=f"{reason}: config from the HF cache ({snapshot}), {weights}")
    entry = lookup_catalog(model_id)
    if entry is not None:
        note = f"{reason}: config from hkv's catalog copy ({entry.name}), {_CONFIG_WEIGHTS}"
        return replace(_from_catalog(entry, dtype_override), source_note=note)
    hint = close_matches_hint(model_id)
    close = f"; {hint}" if hint.startswith("did you mean") else ""  # not the whole catalog after an HF id
    raise SpecNotFoundError(f"{reason}; {model_id!r} is not a catalog name, a local path, nor in the HF "
                            f"cache at {hub_cache_dir()}{close}")


def _from_catalog(entry: CatalogEntry, dtype_override: str | None) -> ModelSpec:
    return from_hf_config(entry.load_config(), entry.name, dtype_override=dtype_override,
                          model_id=entry.model_id or None, source=f"catalog:{entry.name}")


def _from_path(path: Path, arg: str, dtype_override: str | None) -> ModelSpec:
    if path.is_dir():
        return _from_directory(path, arg, dtype_override, model_id=None, source=str(path))
    return _from_config_file(path, arg, dtype_override, model_id=None, source=str(path))


def _from_directory(directory: Path, name: str, dtype_override: str | None, *, model_id: str | None,
                    source: str, partial_ok: bool = False) -> ModelSpec:
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise SpecNotFoundError(
            f"{directory}: directory has no config.json; expected a Hugging Face model folder")
    return _from_config_file(config_path, name, dtype_override, model_id=model_id, source=source,
                             partial_ok=partial_ok)


def _from_config_file(path: Path, name: str, dtype_override: str | None, *, model_id: str | None,
                      source: str, partial_ok: bool = False) -> ModelSpec:
    """A config file; safetensors shards beside it (same directory) give exact weight bytes
    (`partial_ok`: none when some are missing, as in an HF cache snapshot; an error otherwise)."""
    from hkv.model_specs.safetensors_header import checkpoint_tensors

    spec = from_hf_config(read_json_object(path), name, dtype_override=dtype_override, model_id=model_id,
                          source=source)
    return _with_tensors(spec, checkpoint_tensors(path.parent, partial_ok=partial_ok), "local")


def _with_tensors(spec: ModelSpec, tensors: tuple[TensorEntry, ...] | None, source: str) -> ModelSpec:
    """`spec` with the checkpoint's exact bytes (weights_bytes_exact = their total); unchanged
    without safetensors."""
    if tensors is None:
        return spec
    from hkv.model_specs.checkpoint_bytes import CheckpointBytes

    checkpoint = CheckpointBytes.from_tensors(tensors, spec.num_hidden_layers, source)
    return replace(spec, weights_bytes_exact=checkpoint.total_bytes, checkpoint_bytes=checkpoint)


def _looks_like_path(arg: str) -> bool:
    return arg.endswith(".json") or arg.startswith((".", "~", "/")) or arg.count("/") > 1
