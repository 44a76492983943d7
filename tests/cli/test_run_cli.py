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
    args = ["run", "--model", str(model_dir), "--prompt-file", str(files["text"]), *SMALL]
    result = runner.invoke(app, args, env={"COLUMNS": None})  # piped, no width given: lines must not wrap
    assert result.exit_code == 0, result.stderr
    assert "agree: yes" in result.stdout and "tokens/s" in result.stdout
    checks = [line for line in result.stdout.splitlines() if line.startswith("  ok  ")]
    assert checks and all(", measured " in line for line in checks)
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


# --fill on the vllm layout, block size 4: 2 KV heads x 16 dims x (K, V) x 4 bytes = 256 B per token
# per layer, 1,024 B per layer slot, 2 slots per block (2 sliding + 2 full layers, one group each)
# = 2,048 B per block. Copies of the 30-token prompt + 24 output tokens (54 tokens) each hold, at
# their last step, cdiv(53, 4) = 14 full blocks and 14 - (52 - 7) // 4 = 3 sliding blocks (window
# 8): 17. 96 KiB = 48 blocks (47 usable): 47 // 17 = 2 run clean, 3 cannot all finish (51 > 47)
# and preempt; 128 KiB = 64 blocks: 63 // 17 = 3, and 4 need 68.
FILL = ["--block-size", "4", "--max-num-batched-tokens", "16", "--max-new-tokens", "24", "--fill",
        "--layout", "vllm"]


@pytest.mark.parametrize("kv_memory, sustained", [("96KiB", 2), ("128KiB", 3)])
def test_fill_measures_sustained_concurrency_with_the_model(model_dir, files, kv_memory, sustained):
    doc = run_json("--model", model_dir, "--prompt-file", files["jsonl"], "--kv-memory", kv_memory, *FILL)
    fill = doc["report"]["fill"]
    assert (fill["prompt_len"], fill["output_len"]) == (30, 24)
    assert (fill["predicted_sustained"], fill["measured_sustained"], fill["capped"]) == (sustained, sustained, False)
    trials = {t["num_requests"]: t for t in fill["trials"]}
    assert trials[sustained]["clean"] and trials[sustained]["num_finished"] == sustained
    assert trials[sustained + 1]["num_preemptions"] >= 1 and not trials[sustained + 1]["clean"]
    report = doc["report"]
    assert report["agree"] is True and report["layout"] == "vllm"
    assert report["logged_concurrency"] == report["max_concurrency"] > 0
    assert report["physical_limit_concurrency"] > report["logged_concurrency"]


def test_fill_catches_a_wrong_sustained_prediction(model_dir, files, monkeypatch):
    """A planner that forgets to release out-of-window blocks (sliding counted as full attention)
    predicts 63 // 28 = 2 at 128 KiB; the model runs 3: exit 3."""
    import hkv.planner.capacity.sustained_counts as sustained_counts
    from hkv.model_specs.cache_spec import CacheKind

    monkeypatch.setitem(sustained_counts._HELD, CacheKind.SLIDING, sustained_counts._full_held)
    result = run("--model", model_dir, "--prompt-file", files["jsonl"], "--kv-memory", "128KiB", *FILL,
                 "--format", "json")
    assert result.exit_code == 3, result.stderr
    fill = json.loads(result.stdout)["report"]["fill"]
    assert (fill["predicted_sustained"], fill["measured_sustained"]) == (2, 3)
    assert "MISMATCH" in result.stderr and "fill: sustained concurrency" in result.stderr


def test_mismatch_exits_3(model_dir, files, monkeypatch):
    from hkv.planner.layout import KVCacheGroup

    # a planner that under-predicts: every request "needs" one block per group
    monkeypatch.setattr(KVCacheGroup, "blocks_per_request", lambda self, seq_len, t: 1)
    result = run("--model", model_dir, "--prompt-file", files["text"], *SMALL)
    assert result.exit_code == 3
    assert "MISMATCH" in result.stderr and "agree: NO" in result.stdout


def drop_tensors(model_dir, directory, prefix):
    """A copy of the model whose checkpoint lacks the tensors whose names start with `prefix`."""
    from safetensors.torch import load_file, save_file

    directory.mkdir()
    shutil.copy(model_dir / "config.json", directory / "config.json")
    tensors = load_file(str(model_dir / "model.safetensors"))
    kept = {k: v for k, v in tensors.items() if not k.startswith(prefix)}
    save_file(kept, str(directory / "model.safetensors"), metadata={"format": "pt"})
    return directory


def save_foreign(directory, config_class, model_class, **config):
    """A tiny checkpoint of a transformers model hkv does not run (random weights)."""
    torch.manual_seed(0)
    model_class(config_class(**config)).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def bad_models(model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-models")
    no_weights = root / "no-weights"
    no_weights.mkdir()
    shutil.copy(model_dir / "config.json", no_weights / "config.json")
    unknown = root / "unknown-arch"
    unknown.mkdir()
    config = json.loads((model_dir / "config.json").read_text())
    (unknown / "config.json").write_text(json.dumps({**config, "model_type": "nosuchmodel",
                                                      "architectures": ["NoSuchModelForCausalLM"]}))
    shutil.copy(model_dir / "model.safetensors", unknown / "model.safetensors")
    recurrent = root / "recurrent"
    recurrent.mkdir()
    catalog = Path(__file__).resolve().parents[2] / "model_specs" / "catalog"
    shutil.copy(catalog / "deepseek-v3.2.json", recurrent / "config.json")  # DSA: its indexer cache has no binding
    shutil.copy(model_dir / "model.safetensors", recurrent / "model.safetensors")
    small = dict(hidden_size=32, num_attention_heads=2, intermediate_size=64, vocab_size=256)
    return {
        "no_tokenizer": save_model(root / "no-tokenizer", with_tokenizer=False),
        "no_weights": no_weights, "unknown": unknown, "recurrent": recurrent, "nowhere": root / "nowhere",
        "missing_layer": drop_tensors(model_dir, root / "missing-layer", "model.layers.1."),
        "bert": save_foreign(root / "bert", transformers.BertConfig, transformers.BertModel,
                             num_hidden_layers=2, max_position_embeddings=64, **small),
        "codegen": save_foreign(root / "codegen", transformers.CodeGenConfig, transformers.CodeGenForCausalLM,
                                n_layer=2, n_embd=32, n_head=2, n_positions=64, rotary_dim=8, vocab_size=256),
    }


def bad_inputs(model_dir, files, bad_models):
    """(args, exit code, fragment of the last stderr line)."""
    root = files["root"]
    (root / "empty.txt").write_text("")
    (root / "binary.txt").write_bytes(b"w1 \x00\x01 w2")
    (root / "bad.jsonl").write_text('{"prompt": "w1"}\n{"token_ids": [1, 2\n')
    (root / "unknown-id.jsonl").write_text('{"token_ids": [1, 300]}\n')
    (root / "long.txt").write_text(" ".join(["w1"] * 200))
    (root / "brace.txt").write_text("{w1} w2 w3\n")
    (root / "ids.jsonl").write_text('{"token_ids": [5, 6, 7]}\n')
    text = files["text"]
    m = ["--model", model_dir]
    return [
        (m + ["--prompt-file", root / "missing.txt"], 1, "no such prompt file"),
        (m + ["--prompt-file", root], 1, "is a directory, not a prompt file"),
        (m + ["--prompt-file", root / "empty.txt"], 1, "empty prompt file"),
        (m + ["--prompt-file", root / "binary.txt"], 1, "binary"),
        (m + ["--prompt-file", root / "bad.jsonl"], 1, "line 2"),
        (m + ["--prompt-file", root / "brace.txt"], 1, "line 1: invalid JSON"),  # auto: `{` means JSONL
        (m + ["--prompt-file", text, "--prompt-format", "jsonl"], 1, "line 1: invalid JSON"),
        (m + ["--prompt-file", root / "unknown-id.jsonl"], 1, "outside the vocabulary"),
        (m + ["--prompt-file", root / "long.txt"], 1, "accepts at most 127"),
        (m + ["--prompt-file", text, "--max-model-len", "100000"], 1,
         "--max-model-len 100,000 exceeds the 128 positions of"),
        (m + ["--prompt-file", text, "--kv-memory", "2KiB"], 1, "does not fit the KV cache"),
        (m + ["--prompt-file", text, "--kv-memory", "2KiB"], 1,
         "raise --kv-memory or lower --max-new-tokens"),
        # weights: 2 x 256 x 64 (embedding, lm_head) + 4 layers x (q 64x64 + k, v 64x32 + o 64x64
        # + MLP 3 x 64x96 + 4 norms x 64 + q/k norms 2 x 16) + final norm 64 = 156,864 float32
        # = 627,456 B = 612.75 KiB
        (m + ["--prompt-file", text, "--kv-memory", "1TiB"], 1,
         "1024.00 GiB of KV cache plus 612.75 KiB of weights exceed the"),
        (m + ["--prompt-file", text, "--kv-memory", "lots"], 1, "--kv-memory must be a size"),
        (m + ["--prompt-file", text, "--gpu-memory-utilization", "0.5"], 1,
         "--gpu-memory-utilization needs --device cuda; on CPU give --kv-memory"),
        (m + ["--prompt-file", text, "--max-new-tokens", "0"], 1, "--max-new-tokens must be >= 1, got 0"),
        (m + ["--prompt-file", text, "--temperature", "-1"], 1, "--temperature must be >= 0"),
        (m + ["--prompt-file", text, "--top-p", "0"], 1, "--top-p must be in (0, 1]"),
        (m + ["--prompt-file", text, "--block-size", "0"], 1, "--block-size must be a positive integer"),
        (["--model", bad_models["no_tokenizer"], "--prompt-file", text], 1, "has no tokenizer"),
        (["--model", bad_models["no_weights"], "--prompt-file", text], 1, "no *.safetensors weights"),
        (["--model", bad_models["nowhere"], "--prompt-file", text], 1, "not a directory"),
        (["--model", bad_models["unknown"], "--prompt-file", text], 1, "unsupported architecture"),
        (["--model", bad_models["recurrent"], "--prompt-file", text], 1,
         "hkv run cannot run deepseek_v32 yet: its sparse attention keeps an index-key cache"),
        # layer 1's 13 tensors: 4 norms, q/k/v/o, q/k norms, gate/up/down
        (["--model", bad_models["missing_layer"], "--prompt-file", root / "ids.jsonl"], 1,
         "the checkpoint lacks 13 tensor(s) that Gemma3ForCausalLM needs: model.layers.1."),
        (["--model", bad_models["bert"], "--prompt-file", text], 1,
         "architecture BertModel is not a causal language model"),
        (["--model", bad_models["codegen"], "--prompt-file", text], 1,
         "architecture CodeGenForCausalLM is not supported"),
        (m + ["--prompt-file", text, "--layout", "vllm-no-hybrid"], 2, "Invalid value for '--layout'"),
        (m + ["--prompt-file", text, "--device", "tpu"], 2, "Invalid value for '--device'"),
        (m + ["--prompt-file", text, "--prompt-format", "yaml"], 2, "Invalid value for '--prompt-format'"),
        (m + ["--prompt-file", text, "--format", "xml"], 2, "Invalid value for '--format'"),
        (m, 2, "Missing option '--prompt-file'"),
    ] + ([] if torch.cuda.is_available() else [
        (m + ["--prompt-file", text, "--device", "cuda"], 1, "--device cuda: no CUDA device is visible")])


def test_bad_inputs_one_line_and_their_exit_code(model_dir, files, bad_models):
    for args, code, message in bad_inputs(model_dir, files, bad_models):
        for fmt in ("human", "json"):
            result = run("--format", fmt, *args)  # a later --format in args wins
            assert result.exit_code == code, (args, result.stdout, result.stderr)
            lines = result.stderr.strip().splitlines()
            assert "Traceback" not in result.stderr and result.stdout == "", args
            if code == 1:
                assert len(lines) == 1 and lines[0].startswith("hkv: error: "), (args, lines)
            else:
                assert lines[-1].startswith("Error: "), (args, lines)
            assert message in lines[-1], (args, lines)


def test_long_max_model_len_when_the_user_means_it(model_dir, files):
    args = ["run", "--model", str(model_dir), "--prompt-file", str(files["text"]), *SMALL]
    result = runner.invoke(app, args + ["--max-model-len", "200", "--format", "json"],
                           env={"HKV_ALLOW_LONG_MAX_MODEL_LEN": "1"})
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["report"]["max_model_len"] == 200


def test_prompt_format_text_reads_a_brace_file_as_text(model_dir, files):
    brace = files["root"] / "brace-text.txt"
    brace.write_text("{w1} w2 w3\n")
    doc = run_json("--model", model_dir, "--prompt-file", brace, "--prompt-format", "text", *SMALL)
    assert [g["prompt_tokens"] for g in doc["generations"]] == [3]  # {w1} is <unk>, then w2 w3


def test_memory_default_is_said(model_dir, files):
    human = run("--model", model_dir, "--prompt-file", files["text"], *SMALL)
    assert human.exit_code == 0, human.stderr
    assert human.stderr.strip() == "hkv: no --kv-memory given: used 256.00 MiB (the cpu default)"
    doc = run_json("--model", model_dir, "--prompt-file", files["text"], *SMALL)
    assert doc["assumed"] == {"kv_memory_bytes": 256 * 2**20}
    chosen = run_json("--model", model_dir, "--prompt-file", files["text"], *SMALL, "--kv-memory", "1MiB")
    assert chosen["assumed"] == {}
