"""`hkv plan <HF id>` end to end through typer's CliRunner, against the local stand-in for the Hub."""

from __future__ import annotations

import json

from fake_hub import FakeHub, fake_hub, safetensors_file  # noqa: F401 (fake_hub is a fixture)
from typer.testing import CliRunner

from hkv.cli.main import app

runner = CliRunner()

# A two-layer Qwen3 quantized with AWQ (4-bit, group 32), small enough to count by hand.
QWEN3_AWQ = {
    "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
    "vocab_size": 256, "max_position_embeddings": 4096, "torch_dtype": "float16",
    "tie_word_embeddings": False, "rms_norm_eps": 1e-6, "rope_theta": 1000000,
    "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": True,
                            "version": "gemm"},
}


def _awq_linear(prefix: str, in_features: int, out_features: int) -> dict:
    """AWQ GEMM packing: qweight [in, out/8] int32 (eight 4-bit values per int32), qzeros
    [in/32, out/8] int32, scales [in/32, out] fp16."""
    groups, packed = in_features // 32, out_features // 8
    return {f"{prefix}.qweight": ("I32", [in_features, packed], in_features * packed * 4),
            f"{prefix}.qzeros": ("I32", [groups, packed], groups * packed * 4),
            f"{prefix}.scales": ("F16", [groups, out_features], groups * out_features * 2)}


def _layer(i: int) -> dict:
    p = f"model.layers.{i}"
    return {**_awq_linear(f"{p}.self_attn.q_proj", 64, 64), **_awq_linear(f"{p}.self_attn.k_proj", 64, 32),
            **_awq_linear(f"{p}.self_attn.v_proj", 64, 32), **_awq_linear(f"{p}.self_attn.o_proj", 64, 64),
            **_awq_linear(f"{p}.mlp.gate_proj", 64, 128), **_awq_linear(f"{p}.mlp.up_proj", 64, 128),
            **_awq_linear(f"{p}.mlp.down_proj", 128, 64),
            f"{p}.input_layernorm.weight": ("F16", [64], 128),
            f"{p}.post_attention_layernorm.weight": ("F16", [64], 128),
            f"{p}.self_attn.q_norm.weight": ("F16", [16], 32),
            f"{p}.self_attn.k_norm.weight": ("F16", [16], 32)}


# Per layer: q and o 2,048 + 64 + 256 = 2,368 each; k and v 1,024 + 32 + 128 = 1,184 each;
# gate, up and down 4,096 + 128 + 512 = 4,736 each; norms 128 + 128 + 32 + 32 = 320 -> 21,632.
# Two layers 43,264 + embed_tokens 256 x 64 x 2 = 32,768 + lm_head 32,768 + final norm 128 = 108,928.
QWEN3_AWQ_BYTES = 108_928


def _serve_qwen3_awq(hub: FakeHub) -> None:
    first = {"model.embed_tokens.weight": ("F16", [256, 64], 32_768), **_layer(0)}
    second = {**_layer(1), "model.norm.weight": ("F16", [64], 128),
              "lm_head.weight": ("F16", [256, 64], 32_768)}
    shards = {"model-00001-of-00002.safetensors": first, "model-00002-of-00002.safetensors": second}
    index = {"metadata": {}, "weight_map": {t: s for s, tensors in shards.items() for t in tensors}}
    hub.add_repo("Qwen/Qwen3-32B-AWQ", {
        "config.json": json.dumps(QWEN3_AWQ).encode(),
        "model.safetensors.index.json": json.dumps(index).encode(),
        **{name: safetensors_file(tensors) for name, tensors in shards.items()}})


def test_hkv_plan_qwen3_32b_awq_reads_config_and_shard_headers_through_a_real_hub_client(
        fake_hub: FakeHub) -> None:
    """Issue 23's acceptance: `hkv plan Qwen/Qwen3-32B-AWQ --gpu l40s` reads the config and the shard
    headers through huggingface_hub, here from a local server standing in for the Hub."""
    _serve_qwen3_awq(fake_hub)
    result = runner.invoke(app, ["plan", "Qwen/Qwen3-32B-AWQ", "--gpu", "l40s", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    model = json.loads(result.stdout)["model"]
    assert model["source"] == "hub:Qwen/Qwen3-32B-AWQ@" + fake_hub.repos["Qwen/Qwen3-32B-AWQ"].commit
    assert model["source_note"] == "" and model["model_id"] == "Qwen/Qwen3-32B-AWQ"
    assert model["weights_exact"] is True and model["weights_bytes"] == QWEN3_AWQ_BYTES
    assert model["weights_bytes_by_part"] == {"language_model": QWEN3_AWQ_BYTES}
    terms = {t["name"]: t for t in json.loads(result.stdout)["budget"]["terms"]}
    assert terms["weights"]["source"] == "header"  # the budget rests on the headers, not the config
    assert {r[1].rsplit("/", 1)[-1] for r in fake_hub.shard_reads()} == {
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
    assert all(r[2] == "bytes=0-100000" for r in fake_hub.shard_reads())  # headers only


def test_offline_plan_says_what_it_fell_back_to() -> None:
    """tests/conftest.py sets HF_HUB_OFFLINE=1: the catalog's copy is used, and the plan says so."""
    line = ("hkv: offline (HF_HUB_OFFLINE=1): config from hkv's catalog copy (gemma-3-27b-it), weights "
            "computed from the config (no safetensors headers)")
    human = runner.invoke(app, ["plan", "google/gemma-3-27b-it", "--gpu", "h100"])
    assert human.exit_code == 0, human.stderr
    assert line in human.stderr.splitlines()
    as_json = runner.invoke(app, ["plan", "google/gemma-3-27b-it", "--gpu", "h100", "--format", "json"])
    model = json.loads(as_json.stdout)["model"]
    assert model["source"] == "catalog:gemma-3-27b-it" and model["source_note"] == line.removeprefix("hkv: ")


def test_a_catalog_name_never_goes_online(fake_hub: FakeHub) -> None:
    """The README's first command plans from the catalog even with the Hub reachable: no request."""
    result = runner.invoke(app, ["plan", "gemma-3-27b", "--gpu", "h100", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["model"]["source"] == "catalog:gemma-3-27b-it"
    assert fake_hub.requests == []
