"""hkv's on-disk cache of Hub reads: <cache>/<org>--<name>/<revision>.json (see hub_env for <cache>).

A hit is used without asking the Hub, so a second run is offline and fast; delete the file (or
the folder) to fetch a repo again. Writes are atomic (temporary file, then rename).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.hub.hub_checkpoint import CACHE_FORMAT, HubCheckpoint
from hkv.model_specs.hub.hub_env import hkv_hub_cache_dir


def cache_file(model_id: str, revision: str) -> Path:
    return hkv_hub_cache_dir() / model_id.replace("/", "--") / f"{revision}.json"


def read_cached(model_id: str, revision: str) -> HubCheckpoint | None:
    """The cached read of `model_id` at `revision`; None when absent, of an older format or damaged
    (it is then fetched again and overwritten)."""
    path = cache_file(model_id, revision)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or doc.get("format") != CACHE_FORMAT:
            return None
        return HubCheckpoint.from_json(doc, str(path))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, InvalidConfigError):
        return None


def write_cached(checkpoint: HubCheckpoint) -> None:
    """Store `checkpoint`; a cache that cannot be written (read-only home) only costs the next run a
    fetch, so OSError is ignored."""
    path = cache_file(checkpoint.model_id, checkpoint.revision)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, suffix=".tmp",
                                         delete=False) as f:
            json.dump(checkpoint.to_json(), f)
        os.replace(f.name, path)
    except OSError:
        pass
