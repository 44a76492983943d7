"""load_model_spec on files, directories, safetensors checkpoints and the local HF cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hkv.model_specs import InvalidConfigError, ModelSpecError, SpecNotFoundError, load_model_spec

# Hand count of the tiny_llama fixture (hidden 64, 4 q heads / 2 kv heads of 16, mlp 96, vocab 256):
# embed 256*64 = 16,384; per layer q 64*64 = 4096 + k,v 2*(64*32) = 4096 + o 4096 + mlp 3*64*96 = 18,432
# + 2 norms 128 = 30,848; 2 layers = 61,696; final norm 64; untied lm_head 16,384 -> 94,528.
TINY_LLAMA_PARAMS = 94_528


def _write_config(directory: Path, config: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_config_json_path(tmp_path: Path, tiny_llama: dict) -> None:
    path = _write_config(tmp_path / "m", tiny_llama)
    spec = load_model_spec(str(path))
    assert spec.num_params == TINY_LLAMA_PARAMS
    assert spec.weights_bytes_exact is None and spec.weights_bytes == TINY_LLAMA_PARAMS * 2
    assert spec.layer_mix() == {"full": 2} and spec.source == str(path)


def test_directory_with_safetensors_gives_exact_bytes(tmp_path: Path, tiny_llama: dict,
                                                      safetensors_writer) -> None:
    model_dir = tmp_path / "model"
    _write_config(model_dir, tiny_llama)
    # 2x3 bf16 = 12 B + 4 fp32 = 16 B -> 28 B, whatever the analytic count says.
    safetensors_writer(model_dir / "model.safetensors", {"a": ("BF16", [2, 3]), "b": ("F32", [4])})
    spec = load_model_spec(str(model_dir))
    assert spec.weights_bytes_exact == 28 and spec.weights_bytes == 28


def test_sharded_checkpoint_uses_the_index(tmp_path: Path, tiny_llama: dict, safetensors_writer) -> None:
    model_dir = tmp_path / "sharded"
    _write_config(model_dir, tiny_llama)
    safetensors_writer(model_dir / "model-00001-of-00002.safetensors", {"a": ("BF16", [10, 10])})  # 200 B
    second = {"b": ("U8", [7]), "c": ("F16", [3])}  # 7 + 6 = 13 B
    safetensors_writer(model_dir / "model-00002-of-00002.safetensors", second)
    safetensors_writer(model_dir / "stray.safetensors", {"z": ("F32", [1000])})  # not in the index: ignored
    index = {"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                            "b": "model-00002-of-00002.safetensors",
                                            "c": "model-00002-of-00002.safetensors"}}
    (model_dir / "model.safetensors.index.json").write_text(json.dumps(index))
    assert load_model_spec(str(model_dir)).weights_bytes_exact == 213


def test_dtype_override(tmp_path: Path, tiny_llama: dict) -> None:
    spec = load_model_spec(str(_write_config(tmp_path, tiny_llama)), dtype_override="float32")
    assert spec.dtype_bytes == 4 and spec.weights_bytes == TINY_LLAMA_PARAMS * 4


def test_hf_cache_via_hf_hub_cache(tmp_path: Path, tiny_llama: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "hub" / "models--acme--tiny-llama"
    _write_config(repo / "snapshots" / "old", {**tiny_llama, "num_hidden_layers": 1})
    _write_config(repo / "snapshots" / "abc123", tiny_llama)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    spec = load_model_spec("acme/tiny-llama")
    assert spec.num_hidden_layers == 2  # refs/main wins over the other snapshot
    assert spec.source.startswith("hf-cache:") and spec.model_id == "acme/tiny-llama"


def test_hf_cache_via_hf_home(tmp_path: Path, tiny_llama: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_config(tmp_path / "home" / "hub" / "models--acme--other" / "snapshots" / "r1", tiny_llama)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert load_model_spec("Acme/Other").num_params == TINY_LLAMA_PARAMS  # case-insensitive repo match


def test_catalog_is_used_when_cache_lacks_the_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    assert load_model_spec("google/gemma-3-27b-it").source == "catalog:gemma-3-27b-it"


@pytest.mark.parametrize(("content", "error", "fragment"), [
    ("{not json", InvalidConfigError, "invalid JSON at line 1"),
    ("[1, 2]", InvalidConfigError, "top-level JSON is a list; expected an object"),
    ('{"hidden_size": 64}', InvalidConfigError, "no model_type"),
])
def test_bad_config_files(tmp_path: Path, content: str, error: type, fragment: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(error, match=fragment) as err:
        load_model_spec(str(path))
    assert "\n" not in str(err.value)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(SpecNotFoundError, match="no such file or directory"):
        load_model_spec(str(tmp_path / "nope" / "config.json"))


def test_directory_without_config(tmp_path: Path) -> None:
    with pytest.raises(SpecNotFoundError, match="has no config.json"):
        load_model_spec(str(tmp_path))


def test_unknown_name_is_a_model_spec_error() -> None:
    with pytest.raises(ModelSpecError, match="did you mean: qwen3-8b"):
        load_model_spec("qwen3-7b")


def test_truncated_safetensors(tmp_path: Path, tiny_llama: dict) -> None:
    _write_config(tmp_path, tiny_llama)
    (tmp_path / "model.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(InvalidConfigError, match="8-byte safetensors header"):
        load_model_spec(str(tmp_path))
