"""Reading a model from the Hugging Face Hub by its id (`org/name`): the one place hkv goes online.

Owns: fetching config.json and every safetensors shard's header (HTTP range requests through a
real `huggingface_hub` client; weights are never downloaded), hkv's on-disk cache of what was
fetched (one JSON file per repo and revision, so a second run needs no network), when not to go
online (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE), and the one-line reason given when the Hub could
not be asked (unreachable, gated, missing) so that resolve.py can fall back and say so.
HF_ENDPOINT and HF_TOKEN are read at call time, as huggingface_hub's own defaults would.
"""

from hkv.model_specs.hub.hub_checkpoint import HubCheckpoint
from hkv.model_specs.hub.hub_unavailable import HubUnavailable
from hkv.model_specs.hub.load import load_hub_checkpoint

__all__ = ["HubCheckpoint", "HubUnavailable", "load_hub_checkpoint"]
