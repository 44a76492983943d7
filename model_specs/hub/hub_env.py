"""The environment the Hub client obeys, read at call time (huggingface_hub reads it at import)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_ENDPOINT = "https://huggingface.co"
# Seconds to wait for the Hub before falling back: long enough for a slow link, short enough that
# an offline machine is not kept waiting; huggingface_hub's retries are not used for the first call.
HUB_TIMEOUT_S = 5.0
_OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_TRUE = {"1", "on", "yes", "true"}


def hub_endpoint() -> str:
    """$HF_ENDPOINT (a mirror, or the tests' local server), else the public Hub."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline_reason() -> str | None:
    """"offline (HF_HUB_OFFLINE=1)" when the environment forbids going online, else None."""
    for var in _OFFLINE_VARS:
        value = os.environ.get(var, "")
        if value.strip().lower() in _TRUE:
            return f"offline ({var}={value})"
    return None


def hkv_hub_cache_dir() -> Path:
    """Where hkv keeps what it fetched: $HKV_HUB_CACHE, else $XDG_CACHE_HOME/hkv/hub, else
    ~/.cache/hkv/hub."""
    if os.environ.get("HKV_HUB_CACHE"):
        return Path(os.environ["HKV_HUB_CACHE"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()
    return base / "hkv" / "hub"
