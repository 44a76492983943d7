"""One HF id -> its HubCheckpoint: hkv's disk cache first, then the Hub unless offline."""

from __future__ import annotations

from hkv.model_specs.hub.disk_cache import read_cached, write_cached
from hkv.model_specs.hub.fetch import fetch_checkpoint
from hkv.model_specs.hub.hub_checkpoint import HubCheckpoint
from hkv.model_specs.hub.hub_env import offline_reason
from hkv.model_specs.hub.hub_unavailable import HubUnavailable


def load_hub_checkpoint(model_id: str, revision: str = "main") -> HubCheckpoint:
    """`model_id`'s config and tensor headers. A cached read is used as is (no network); otherwise
    the Hub is asked and the answer cached. Raises HubUnavailable (offline, unreachable, gated,
    missing) so that the caller can fall back."""
    cached = read_cached(model_id, revision)
    if cached is not None:
        return cached
    offline = offline_reason()
    if offline is not None:
        raise HubUnavailable(offline)
    checkpoint = fetch_checkpoint(model_id, revision)
    write_cached(checkpoint)
    return checkpoint
