"""HF ids resolve through a real huggingface_hub client against a local stand-in for the Hub.

Every expected byte count is numel x element size worked out here, from the tensors the test writes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fake_hub import FakeHub, fake_hub, safetensors_file  # noqa: F401 (fake_hub is a fixture)

from hkv.model_specs import InvalidConfigError, SpecNotFoundError, load_model_spec

LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
         "vocab_size": 256, "max_position_embeddings": 512, "torch_dtype": "bfloat16"}
OFFLINE_CONFIG_WEIGHTS = "weights computed from the config (no safetensors headers)"


def _config(config: dict = LLAMA) -> bytes:
    return json.dumps(config).encode()


def _sharded_repo(hub: FakeHub, repo_id: str) -> None:
    """Two shards and an index: language model, a vision tower, MTP weights (by name and, as in
    DeepSeek-V3, as layer index num_hidden_layers = 2), a sub-byte F4 tensor and 300 kB of data."""
    first = {
        "model.embed_tokens.weight": ("BF16", [256, 64], 256 * 64 * 2),      # 32,768
        "model.layers.0.mlp.down_proj.weight": ("BF16", [64, 96], 64 * 96 * 2),  # 12,288
        "model.layers.1.big.weight": ("U8", [300_000], 300_000),              # 300,000
        "vision_tower.encoder.layers.5.fc1.weight": ("F32", [10, 10], 400),   # vision: 400
        "multi_modal_projector.linear.weight": ("F16", [8, 4], 64),           # vision: 64
    }
    second = {
        "model.layers.1.self_attn.q_proj.weight_packed": ("F4", [4, 6], 12),  # 24 x 4 bit = 12 B
        "model.layers.2.eh_proj.weight": ("BF16", [64, 128], 64 * 128 * 2),   # mtp (index 2): 16,384
        "mtp.fc.weight": ("F32", [5], 20),                                   # mtp: 20
        "lm_head.weight": ("BF16", [256, 64], 256 * 64 * 2),                 # 32,768
    }
    shards = {"model-00001-of-00002.safetensors": first, "model-00002-of-00002.safetensors": second}
    files = {name: safetensors_file(tensors) for name, tensors in shards.items()}
    weight_map = {t: shard for shard, tensors in shards.items() for t in tensors}
    files["model.safetensors.index.json"] = json.dumps({"metadata": {}, "weight_map": weight_map}).encode()
    hub.add_repo(repo_id, {"config.json": _config(), **files})


SHARDED_PARTS = {"language_model": 32_768 + 12_288 + 300_000 + 12 + 32_768, "vision": 400 + 64,
                 "mtp": 16_384 + 20}


def test_online_resolution_reads_the_config_and_every_shard_header(fake_hub: FakeHub) -> None:
    _sharded_repo(fake_hub, "acme/sharded")
    spec = load_model_spec("acme/sharded")
    assert spec.source == "hub:acme/sharded@" + fake_hub.repos["acme/sharded"].commit
    assert spec.source_note == ""
    assert spec.num_hidden_layers == 2 and spec.model_id == "acme/sharded"
    assert spec.checkpoint_bytes is not None and spec.checkpoint_bytes.source == "hub"
    assert spec.checkpoint_bytes.bytes_by_part == SHARDED_PARTS
    assert spec.weights_bytes_exact == spec.weights_bytes == sum(SHARDED_PARTS.values()) == 394_704
    reads = fake_hub.shard_reads()
    assert len(reads) == 2  # one 100 kB range read per shard: each header fits in it
    assert all(r[2] == "bytes=0-100000" for r in reads)  # the 300 kB of tensor data were never asked for


def test_a_header_longer_than_the_first_read_is_read_by_a_second_range(fake_hub: FakeHub) -> None:
    names = {f"model.layers.0.experts.{i}.a_rather_long_projection_name_to_pad_the_header.weight":
             ("F16", [1], 2) for i in range(1500)}
    fake_hub.add_repo("acme/long-header",
                      {"config.json": _config(), "model.safetensors": safetensors_file(names)})
    spec = load_model_spec("acme/long-header")
    assert spec.weights_bytes_exact == 1500 * 2
    ranges = [r[2] for r in fake_hub.shard_reads()]
    assert ranges[0] == "bytes=0-100000" and ranges[1].startswith("bytes=8-") and len(ranges) == 2


def test_the_second_run_reads_hkvs_disk_cache_with_the_hub_stopped(fake_hub: FakeHub, tmp_path: Path) -> None:
    _sharded_repo(fake_hub, "acme/sharded")
    first = load_model_spec("acme/sharded")
    fake_hub.stop()
    count = len(fake_hub.requests)
    second = load_model_spec("acme/sharded")
    assert len(fake_hub.requests) == count  # not one request
    assert second.source == first.source and second.source_note == ""
    assert second.checkpoint_bytes == first.checkpoint_bytes
    assert (tmp_path / "hkv-cache" / "acme--sharded" / "main.json").is_file()


def test_a_repo_without_safetensors_gets_weights_from_the_config(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("acme/bin-only", {"config.json": _config(), "pytorch_model.bin": b"\0" * 16})
    spec = load_model_spec("acme/bin-only")
    assert spec.source.startswith("hub:acme/bin-only@") and spec.checkpoint_bytes is None
    assert spec.weights_bytes_exact is None


def test_gated_repo_needs_hf_token(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hub.add_repo("acme/gated", {"config.json": _config(),
                                     "model.safetensors": safetensors_file({"w": ("F32", [3], 12)})},
                      token="hf_secret")
    with pytest.raises(SpecNotFoundError) as error:
        load_model_spec("acme/gated")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(
        "gated repo: set HF_TOKEN to a token that may read acme/gated (the Hub answered 401")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    assert load_model_spec("acme/gated").weights_bytes_exact == 12


def test_missing_repo_says_so_in_one_line(fake_hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(SpecNotFoundError) as error:
        load_model_spec("acme/no-such-model")
    assert str(error.value) == (
        f"acme/no-such-model is not on the Hub at {fake_hub.url} (404): check the spelling (org/name); "
        f"'acme/no-such-model' is not a catalog name, a local path, nor in the HF cache at "
        f"{tmp_path}/hf-cache")


def test_unreachable_hub_falls_back_to_the_hf_cache_the_first_run_filled(fake_hub: FakeHub,
                                                                         tmp_path: Path) -> None:
    _sharded_repo(fake_hub, "acme/sharded")
    load_model_spec("acme/sharded")  # fills the HF cache with config.json (hf_hub_download)
    fake_hub.stop()
    (tmp_path / "hkv-cache" / "acme--sharded" / "main.json").unlink()
    start = time.monotonic()
    spec = load_model_spec("acme/sharded")
    assert time.monotonic() - start < 5  # a refused connection falls back at once
    commit = fake_hub.repos["acme/sharded"].commit
    snapshot = tmp_path / "hf-cache" / "models--acme--sharded" / "snapshots" / commit
    assert spec.source == f"hf-cache:{snapshot}"
    assert spec.source_note == (f"the Hub at {fake_hub.url} is unreachable (ConnectError): config from the "
                                f"HF cache ({snapshot}), {OFFLINE_CONFIG_WEIGHTS}")


def test_offline_falls_back_to_the_hf_cache_then_the_catalog(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/conftest.py sets HF_HUB_OFFLINE=1 for every test.
    snapshot = tmp_path / "hub" / "models--acme--local" / "snapshots" / "r1"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_bytes(_config())
    (snapshot / "model.safetensors").write_bytes(safetensors_file({"w": ("BF16", [4, 4], 32)}))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    local = load_model_spec("acme/local")
    assert local.source == f"hf-cache:{snapshot}" and local.weights_bytes_exact == 32
    assert local.checkpoint_bytes is not None and local.checkpoint_bytes.source == "local"
    assert local.source_note == (f"offline (HF_HUB_OFFLINE=1): config from the HF cache ({snapshot}), "
                                 "weights from its safetensors headers")
    catalog = load_model_spec("google/gemma-3-27b-it")
    assert catalog.source == "catalog:gemma-3-27b-it" and catalog.weights_bytes_exact is None
    assert catalog.source_note == ("offline (HF_HUB_OFFLINE=1): config from hkv's catalog copy "
                                   f"(gemma-3-27b-it), {OFFLINE_CONFIG_WEIGHTS}")
    with pytest.raises(SpecNotFoundError, match=r"^offline \(HF_HUB_OFFLINE=1\); 'acme/elsewhere' is not a"):
        load_model_spec("acme/elsewhere")


def test_a_shard_that_is_not_safetensors_is_one_error_line(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("acme/broken", {"config.json": _config(), "model.safetensors": b"\xff" * 8 + b"{}"})
    with pytest.raises(InvalidConfigError) as error:
        load_model_spec("acme/broken")
    assert str(error.value).startswith("acme/broken: ") and "\n" not in str(error.value)
