"""Fetch a repo's config.json and safetensors headers from the Hub through `huggingface_hub`.

Requests: a HEAD of config.json (no retries, HUB_TIMEOUT_S: the probe that decides whether the Hub
answers at all), hf_hub_download of config.json and model.safetensors.index.json (into the HF cache,
where transformers and vLLM look too), then for each shard two HTTP range reads at most: the first
100 kB and, for longer headers, the rest of the header. Tensor data is never requested.
Every failure to get an answer becomes a HubUnavailable with a one-line reason; a header that is
not safetensors, an InvalidConfigError.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.hf_cache import hub_cache_dir
from hkv.model_specs.hub.hub_checkpoint import HubCheckpoint
from hkv.model_specs.hub.hub_env import HUB_TIMEOUT_S, hub_endpoint
from hkv.model_specs.hub.hub_unavailable import HubUnavailable
from hkv.model_specs.json_file import read_json_object
from hkv.model_specs.safetensors_header import INDEX_FILE, tensors_in_header
from hkv.model_specs.tensor_entry import TensorEntry

CONFIG_FILE = "config.json"
SINGLE_FILE = "model.safetensors"
_HEADER_TIMEOUT_S = 3 * HUB_TIMEOUT_S  # a header read moves up to 100 kB (more for huge headers)
_SHARD_WORKERS = 8  # DeepSeek-size repos have ~160 shards: read their headers a few at a time


def fetch_checkpoint(model_id: str, revision: str = "main") -> HubCheckpoint:
    """`model_id`'s config and tensor headers at `revision`; raises HubUnavailable."""
    import httpx2  # huggingface_hub's HTTP client: imported late, only when going online
    from huggingface_hub import errors as hf_errors

    endpoint = hub_endpoint()
    try:
        return _fetch(model_id, revision, endpoint)
    except hf_errors.HfHubHTTPError as error:
        raise HubUnavailable(_http_reason(error, model_id, endpoint)) from None
    except (httpx2.TransportError, hf_errors.OfflineModeIsEnabled) as error:
        raise HubUnavailable(f"the Hub at {endpoint} is unreachable ({type(error).__name__})") from None
    except hf_errors.SafetensorsParsingError as error:
        raise InvalidConfigError(f"{model_id}: {str(error).splitlines()[0]}") from None


def _fetch(model_id: str, revision: str, endpoint: str) -> HubCheckpoint:
    from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_url

    probe = get_hf_file_metadata(hf_hub_url(model_id, CONFIG_FILE, revision=revision, endpoint=endpoint),
                                 timeout=HUB_TIMEOUT_S, endpoint=endpoint)
    commit = probe.commit_hash or revision
    config = read_json_object(_download(model_id, CONFIG_FILE, commit, endpoint))
    api = HfApi(endpoint=endpoint)
    tensors = _tensors(model_id, commit, endpoint,
                       lambda shard: api.parse_safetensors_file_metadata(
                           model_id, shard, revision=commit, timeout=_HEADER_TIMEOUT_S))
    return HubCheckpoint(model_id, revision, commit, config, tensors)


def _download(model_id: str, filename: str, commit: str, endpoint: str) -> Path:
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(model_id, filename, revision=commit, cache_dir=hub_cache_dir(),
                                endpoint=endpoint, etag_timeout=HUB_TIMEOUT_S))


def _tensors(model_id: str, commit: str, endpoint: str,
             read_header: Callable[[str], Any]) -> tuple[TensorEntry, ...] | None:
    """Every tensor of the shards the index names, else of model.safetensors; None when the repo has
    neither (a .bin or GGUF repo: weights then come from the config)."""
    from huggingface_hub.errors import RemoteEntryNotFoundError

    try:
        shards = _indexed_shards(_download(model_id, INDEX_FILE, commit, endpoint))
    except RemoteEntryNotFoundError:
        shards = [SINGLE_FILE]
    if not shards:
        return None
    try:
        with ThreadPoolExecutor(max_workers=min(_SHARD_WORKERS, len(shards))) as pool:
            headers = list(pool.map(read_header, shards))
    except RemoteEntryNotFoundError as missing:
        if shards == [SINGLE_FILE]:
            return None
        raise HubUnavailable(f"{model_id}: {INDEX_FILE} names a shard the Hub does not have "
                             f"({missing.response.url.path.rsplit('/', 1)[-1]})") from None
    return tuple(t for shard, meta in zip(shards, headers) for t in tensors_in_header(
        {name: {"dtype": info.dtype, "shape": info.shape, "data_offsets": info.data_offsets}
         for name, info in meta.tensors.items()}, f"{model_id}/{shard}"))


def _indexed_shards(index_path: Path) -> list[str]:
    try:
        weight_map = json.loads(index_path.read_text(encoding="utf-8"))["weight_map"]
        return sorted(set(weight_map.values()))
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        raise InvalidConfigError(f"{index_path}: expected a JSON object with a 'weight_map'") from None


_GATED = ("gated repo: set HF_TOKEN to a token that may read {id} (the Hub answered {status}; accept the "
          "model's licence on its page first)")
# The Hub names most failures in X-Error-Code; the status decides the rest.
_CODE_REASONS = {
    "GatedRepo": _GATED,
    "RevisionNotFound": "{id} has no such revision on the Hub ({status})",
    "EntryNotFound": "{id} has no " + CONFIG_FILE + " on the Hub ({status}): not a transformers model repo",
}
_STATUS_REASONS = {
    401: _GATED[:-1] + "; a private or misspelt repo answers the same)",
    403: _GATED,
    404: "{id} is not on the Hub at {endpoint} (404): check the spelling (org/name)",
}


_OTHER_STATUS = "the Hub at {endpoint} answered HTTP {status}"


def _http_reason(error: Any, model_id: str, endpoint: str) -> str:
    response = error.response
    status = response.status_code if response is not None else 0
    code = response.headers.get("X-Error-Code", "") if response is not None else ""
    template = _CODE_REASONS.get(code) or _STATUS_REASONS.get(status, _OTHER_STATUS)
    return template.format(id=model_id, endpoint=endpoint, status=status)
