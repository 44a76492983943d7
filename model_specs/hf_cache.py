"""Find a model's config in the local Hugging Face hub cache; never downloads anything.

Layout: <cache>/models--<org>--<name>/snapshots/<revision>/config.json, with refs/main naming the
revision a plain `from_pretrained` would use.
"""

from __future__ import annotations

import os
from pathlib import Path


def hub_cache_dir() -> Path:
    """$HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub (huggingface_hub's order)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def looks_like_hf_id(arg: str) -> bool:
    parts = arg.split("/")
    return len(parts) == 2 and all(parts) and not arg.startswith((".", "~"))


def cached_snapshot(model_id: str, cache_dir: Path | None = None) -> Path | None:
    """The snapshot directory holding config.json for `model_id` (case-insensitive), or None."""
    cache = cache_dir or hub_cache_dir()
    if not looks_like_hf_id(model_id) or not cache.is_dir():
        return None
    wanted = "models--" + model_id.replace("/", "--")
    repos = [p for p in cache.iterdir() if p.name.lower() == wanted.lower() and p.is_dir()]
    for repo in sorted(repos, key=lambda p: p.name != wanted):  # an exact-case match first
        snapshot = _preferred_snapshot(repo)
        if snapshot is not None:
            return snapshot
    return None


def _preferred_snapshot(repo: Path) -> Path | None:
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        pinned = snapshots / ref.read_text(encoding="utf-8").strip()
        if (pinned / "config.json").is_file():
            return pinned
    if not snapshots.is_dir():
        return None
    candidates = [s for s in snapshots.iterdir() if (s / "config.json").is_file()]
    return max(candidates, key=lambda s: s.stat().st_mtime) if candidates else None
