"""Turn what a user typed (catalog name, HF id, directory, config.json path) into a ModelSpec.

Resolution order, first hit wins:
1. an existing path: a model directory (its config.json) or a JSON file;
2. an HF id present in the local hub cache (the real config beats the catalog copy, and its
   safetensors give exact weight bytes);
3. a catalog name or HF id.
Weight bytes are exact whenever the config sits next to *.safetensors shards (only headers are read).
Nothing is ever downloaded.
"""

from __future__ import annotations

from pathlib import Path

from hkv.model_specs.catalog import close_matches_hint, lookup_catalog
from hkv.model_specs.errors import SpecNotFoundError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.hf_cache import cached_snapshot, hub_cache_dir, looks_like_hf_id
from hkv.model_specs.json_file import read_json_object
from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.safetensors_header import checkpoint_weights_bytes


def load_model_spec(arg: str, *, dtype_override: str | None = None) -> ModelSpec:
    """The ModelSpec `arg` names; `dtype_override` (e.g. "float16") replaces the config's weight dtype.

    Raises SpecNotFoundError when nothing matches and InvalidConfigError for unreadable configs.
    """
    path = Path(arg).expanduser()
    if path.exists():
        return _from_path(path, arg, dtype_override)
    if looks_like_hf_id(arg):
        snapshot = cached_snapshot(arg)
        if snapshot is not None:
            return _from_directory(snapshot, arg, dtype_override, model_id=arg, source=f"hf-cache:{snapshot}")
    entry = lookup_catalog(arg)
    if entry is not None:
        return from_hf_config(entry.load_config(), entry.name, dtype_override=dtype_override,
                              model_id=entry.model_id or None, source=f"catalog:{entry.name}")
    if _looks_like_path(arg):
        raise SpecNotFoundError(
            f"{arg}: no such file or directory; expected a model directory or config.json")
    raise SpecNotFoundError(
        f"{arg!r} is not a catalog name, a local path, or an HF id in the cache at {hub_cache_dir()}; "
        f"{close_matches_hint(arg)}")


def _from_path(path: Path, arg: str, dtype_override: str | None) -> ModelSpec:
    if path.is_dir():
        return _from_directory(path, arg, dtype_override, model_id=None, source=str(path))
    return _from_config_file(path, arg, dtype_override, model_id=None, source=str(path))


def _from_directory(directory: Path, name: str, dtype_override: str | None, *, model_id: str | None,
                    source: str) -> ModelSpec:
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise SpecNotFoundError(
            f"{directory}: directory has no config.json; expected a Hugging Face model folder")
    return _from_config_file(config_path, name, dtype_override, model_id=model_id, source=source)


def _from_config_file(path: Path, name: str, dtype_override: str | None, *, model_id: str | None,
                      source: str) -> ModelSpec:
    """A config file; safetensors shards beside it (same directory) give exact weight bytes."""
    config = read_json_object(path)
    return from_hf_config(config, name, dtype_override=dtype_override, model_id=model_id, source=source,
                          weights_bytes_exact=checkpoint_weights_bytes(path.parent))


def _looks_like_path(arg: str) -> bool:
    return arg.endswith(".json") or arg.startswith((".", "~", "/")) or arg.count("/") > 1
