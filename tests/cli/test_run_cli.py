"""`hkv run` end to end on a tiny saved Gemma 3 with a word-level tokenizer: outputs, the report,
--fill, the mismatch exit code and every bad input (exit 1, one stderr line, nothing on stdout)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from typer.testing import CliRunner  # noqa: E402

from hkv.cli.main import app  # noqa: E402

runner = CliRunner()
WORDS = ["<unk>", "<bos>", "<eos>"] + [f"w{i}" for i in range(253)]  # 256 = the model's vocabulary
SMALL = ["--block-size", "4", "--max-num-batched-tokens", "16", "--max-new-tokens", "6"]


def save_model(directory, *, with_tokenizer=True):
    config = transformers.AutoConfig.for_model(
        "gemma3_text", hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        vocab_size=256, intermediate_size=96, max_position_embeddings=128, tie_word_embeddings=False,
        initializer_range=0.5, pad_token_id=0, bos_token_id=1, eos_token_id=2, num_hidden_layers=4,
        sliding_window=8, layer_types=["sliding_attention", "full_attention"] * 2)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config)).save_pretrained(directory)
    if with_tokenizer:
        vocab = {w: i for i, w in enumerate(WORDS)}
        tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
        tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
        tok.save(str(directory / "tokenizer.json"))
    return directory


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_model(tmp_path_factory.mktemp("tiny-gemma3"))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("prompts")
    text = root / "prompt.txt"
    text.write_text(" ".join(f"w{i}" for i in range(20)) + "\n")
    jsonl = root / "prompts.jsonl"
    jsonl.write_text(json.dumps({"token_ids": list(range(10, 40))}) + "\n"
                     + json.dumps({"prompt": "w7 w8 w9 w10 w11"}) + "\n")
    return {"text": text, "jsonl": jsonl, "root": root}


def run(*args):
    return runner.invoke(app, ["run", *map(str, args)])


def run_json(*args):
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_text_prompt_human(model_dir, files):
    result = run("--model", model_dir, "--prompt-file", files["text"], *SMALL)
    assert result.exit_code == 0, result.stderr
    assert "agree: yes" in result.stdout and "tokens/s" in result.stdout
    assert "[length, 6 tokens]" in result.stdout  # the streamed completion's footer
    assert result.stdout.split()[0].startswith("w")  # streamed text first


def test_jsonl_json_output(model_dir, files):
    doc = run_json("--model", model_dir, "--prompt-file", files["jsonl"], *SMALL)
    assert doc["schema_version"] == 1 and doc["device"] == "cpu" and doc["dtype"] == "float32"
    gens = doc["generations"]
    assert [g["prompt_tokens"] for g in gens] == [30, 5]
    for g in gens:
        assert 1 <= len(g["token_ids"]) <= 6 and g["finish_reason"] in ("length", "eos")
        assert g["text"] == " ".join(WORDS[t] for t in g["token_ids"] if t > 2)
    assert set(doc["timings"]) >= {"load_s", "prefill_tokens_per_s", "decode_tokens_per_s", "num_steps"}
    report = doc["report"]
    # prompt tokens served by the prefix cache (prompt 2 starts like prompt 1) are not computed
    assert doc["timings"]["prefill_tokens"] == 35 - report["num_hit_tokens"]
    assert report["agree"] is True and all(c["ok"] for c in report["checks"])
    assert report["layout"] == "hkv" and report["kv_memory_bytes"] == 256 * 2**20
    assert report["allocated_bytes"] == sum(p["num_blocks"] * p["bytes_per_block"] for p in report["pools"])
    kinds = {g["kind"] for g in report["groups"]}
    assert kinds == {"sliding", "full"}
    sliding = next(g for g in report["groups"] if g["kind"] == "sliding")
    assert sliding["early_released_blocks"] > 0  # a 30-token prompt crosses the 8-token window
    # greedy tokens equal transformers' generate
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).eval()
    out = model.generate(torch.tensor([list(range(10, 40))]), max_new_tokens=6, do_sample=False)
    out = out[0, 30:].tolist()
    assert gens[0]["token_ids"] == out[:len(gens[0]["token_ids"])]


def test_fill_admits_the_planned_copies_and_runs_them(model_dir, files):
    doc = run_json("--model", model_dir, "--prompt-file", files["jsonl"], *SMALL, "--kv-memory", "96KiB",
                   "--fill", "--layout", "vllm")
    fill = doc["report"]["fill"]
    assert fill["seq_len"] == 36 and fill["predicted"] >= 2
    assert fill["admitted"] == fill["predicted"] == fill["finished"] and fill["num_preemptions"] == 0
    assert doc["report"]["agree"] is True and doc["report"]["layout"] == "vllm"


def test_mismatch_exits_3(model_dir, files, monkeypatch):
    from hkv.planner.layout import KVCacheGroup

    # a planner that under-predicts: every request "needs" one block per group
    monkeypatch.setattr(KVCacheGroup, "blocks_per_request", lambda self, seq_len, t: 1)
    result = run("--model", model_dir, "--prompt-file", files["text"], *SMALL)
    assert result.exit_code == 3
    assert "MISMATCH" in result.stderr and "agree: NO" in result.stdout


def bad_inputs(model_dir, files, tmp_path):
    root = files["root"]
    (root / "empty.txt").write_text("")
    (root / "binary.txt").write_bytes(b"w1 \x00\x01 w2")
    (root / "bad.jsonl").write_text('{"prompt": "w1"}\n{"token_ids": [1, 2\n')
    (root / "unknown-id.jsonl").write_text('{"token_ids": [1, 300]}\n')
    (root / "long.txt").write_text(" ".join(["w1"] * 200))
    no_tokenizer = save_model(tmp_path / "no-tokenizer", with_tokenizer=False)
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    shutil.copy(model_dir / "config.json", no_weights / "config.json")
    unknown = tmp_path / "unknown-arch"
    unknown.mkdir()
    config = json.loads((model_dir / "config.json").read_text())
    (unknown / "config.json").write_text(json.dumps({**config, "model_type": "nosuchmodel",
                                                      "architectures": ["NoSuchModelForCausalLM"]}))
    shutil.copy(model_dir / "model.safetensors", unknown / "model.safetensors")
    recurrent = tmp_path / "recurrent"
    recurrent.mkdir()
    catalog = Path(__file__).resolve().parents[2] / "model_specs" / "catalog"
    shutil.copy(catalog / "bamba-9b.json", recurrent / "config.json")
    shutil.copy(model_dir / "model.safetensors", recurrent / "model.safetensors")
    text = files["text"]
    return [
        (["--model", model_dir, "--prompt-file", root / "missing.txt"], "no such prompt file"),
        (["--model", model_dir, "--prompt-file", root / "empty.txt"], "empty prompt file"),
        (["--model", model_dir, "--prompt-file", root / "binary.txt"], "binary"),
        (["--model", model_dir, "--prompt-file", root / "bad.jsonl"], "line 2"),
        (["--model", model_dir, "--prompt-file", root / "unknown-id.jsonl"], "outside the vocabulary"),
        (["--model", model_dir, "--prompt-file", root / "long.txt"], "accepts at most 127"),
        (["--model", model_dir, "--prompt-file", text, "--kv-memory", "2KiB"], "does not fit the KV cache"),
        (["--model", model_dir, "--prompt-file", text, "--kv-memory", "lots"], "--kv-memory must be a size"),
        (["--model", model_dir, "--prompt-file", text, "--layout", "vllm-no-hybrid"],
         "--layout must be one of"),
        (["--model", model_dir, "--prompt-file", text, "--device", "cuda"] if not torch.cuda.is_available()
         else ["--model", model_dir, "--prompt-file", text, "--device", "tpu"], "--device"),
        (["--model", model_dir, "--prompt-file", text, "--gpu-memory-utilization", "0.5"],
         "needs --device cuda"),
        (["--model", model_dir, "--prompt-file", text, "--max-new-tokens", "0"], "--max-new-tokens"),
        (["--model", no_tokenizer, "--prompt-file", text], "has no tokenizer"),
        (["--model", no_weights, "--prompt-file", text], "no *.safetensors weights"),
        (["--model", tmp_path / "nowhere", "--prompt-file", text], "not a directory"),
        (["--model", unknown, "--prompt-file", text], "unsupported architecture"),
        (["--model", recurrent, "--prompt-file", text], "come later"),
    ]


def test_bad_inputs_one_line_exit_1(model_dir, files, tmp_path):
    for args, message in bad_inputs(model_dir, files, tmp_path):
        for fmt in ("human", "json"):
            result = run(*args, "--format", fmt)
            assert result.exit_code == 1, (args, result.stdout, result.stderr)
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1, (args, lines)
            assert lines[0].startswith("hkv: error: ") and message in lines[0], (args, lines)
            assert result.stdout == "", args
