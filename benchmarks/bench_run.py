"""`hkv run`'s engine against transformers' batched `generate()`, same model, prompts and tokens.

    .venv/bin/python benchmarks/bench_run.py [--repeats 5] [--cases a,b,c] [--vllm]

Cases (tiny random Gemma-3 models saved to a temp dir, greedy, EOS ignored):
  a: 4 layers, hidden 256, head_dim 64 (sliding 512 + full); 8 prompts of ~200 tokens, 64 new
  b: the same with 32 prompts
  c: sliding window 256 + full, 4 prompts of 2,000 tokens, 32 new: paging keeps only the window
     of the sliding layers, so hkv's KV bytes are also reported next to HF's dense cache.

Each case runs hkv and HF `repeats` times in one process, in alternating order (hkv first, then
HF first), and reports medians of tokens/s over generation only (hkv: scheduler + model steps;
HF: the generate call) and end to end (+ weights load). The ratio lines are the medians of the
per-repeat ratios (each repeat's hkv and HF runs are seconds apart, so a slow spell on a shared
host hits both), with their range. Greedy tokens must be equal on both sides (asserted).
KV bytes: hkv's peak blocks in use x their bytes (the manager's count; in (c) a 4,096-token
step holds a whole prompt in the sliding layers until the step ends), HF's cache tensors at the
end (measured; its prompt K/V of the sliding layers were activations, not cache).
Prints lines of the form `ratio hkv/hf generation <case>: X.XXx`.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

from hkv.runtime.live.live_run import generate
from hkv.runtime.live.live_setup import RunOptions, load_runner, open_model, plan_run
from hkv.runtime.live.run_config import RunConfig

KV_BYTES = 512 << 20
HERE = Path(__file__).resolve().parent
VLLM_PYTHON = HERE.parent / ".venv-vllm" / "bin" / "python"
MAX_NUM_BATCHED_TOKENS = 4096


@dataclass(frozen=True)
class Case:
    name: str
    num_prompts: int
    prompt_len: int
    new_tokens: int
    sliding_window: int
    max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS  # hkv's step budget (chunked prefill beyond)


CASES = {
    "a": Case("a: 8 x ~200 tokens, 64 new", 8, 200, 64, 512),
    "b": Case("b: 32 x ~200 tokens, 64 new", 32, 200, 64, 512),
    "c": Case("c: 4 x 2,000 tokens, window 256, 32 new", 4, 2000, 32, 256),
}


def save_model(case: Case, directory: Path) -> Path:
    config = AutoConfig.for_model(
        "gemma3_text", hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
        intermediate_size=512, num_hidden_layers=4, vocab_size=1024, max_position_embeddings=4096,
        sliding_window=case.sliding_window, layer_types=["sliding_attention", "full_attention"] * 2,
        tie_word_embeddings=False, initializer_range=0.5, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(copy.deepcopy(config)).save_pretrained(directory)
    return directory


def prompts_for(case: Case) -> list[list[int]]:
    generator = torch.Generator().manual_seed(1)
    lens = [case.prompt_len - 8 + (i * 5) % 17 for i in range(case.num_prompts)]  # ragged, ~prompt_len
    return [torch.randint(3, 1024, (n,), generator=generator).tolist() for n in lens]


def run_hkv(path: Path, prompts: list[list[int]], case: Case) -> tuple[list[list[int]], float, float, int]:
    t0 = time.perf_counter()
    files = open_model(str(path))
    options = RunOptions(max_num_batched_tokens=case.max_num_batched_tokens, max_model_len=4096)
    the_plan = plan_run(files, options, KV_BYTES)
    runner = load_runner(files, the_plan, torch.device("cpu"))
    t1 = time.perf_counter()
    config = RunConfig(max_new_tokens=case.new_tokens, max_num_batched_tokens=case.max_num_batched_tokens)
    outcome = generate(runner, prompts, config)
    t2 = time.perf_counter()
    bytes_per_block = {p.pool_id: p.bytes_per_block // p.num_slots for p in the_plan.primary.layout.pools}
    held = sum(n * bytes_per_block[g.pool_id] * g.num_layers
               for n, g in zip(outcome.cache.peak_blocks_in_use, the_plan.primary.layout.groups))
    return [g.output_token_ids for g in outcome.generations], t2 - t1, t2 - t0, held


def run_hf(path: Path, prompts: list[list[int]], case: Case) -> tuple[list[list[int]], float, float, int]:
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="sdpa").eval()
    t1 = time.perf_counter()
    width = max(map(len, prompts))
    ids = torch.zeros(len(prompts), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):  # left padding
        ids[i, width - len(p):] = torch.tensor(p)
        mask[i, width - len(p):] = 1
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=mask, max_new_tokens=case.new_tokens, do_sample=False,
                             eos_token_id=None, pad_token_id=0, return_dict_in_generate=True)
    t2 = time.perf_counter()
    # HF's cache as it ended, measured on its tensors (its sliding layers keep only the window)
    cache = out["cache"] if "cache" in out else out["past_key_values"]  # renamed in transformers 5.24
    held = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values)
               if isinstance(t, torch.Tensor))
    return out.sequences[:, width:].tolist(), t2 - t1, t2 - t0, held


def run_vllm(path: Path, prompts: list[list[int]], case: Case) -> tuple[float, list[list[int]]] | None:
    """(generation tok/s, greedy tokens) from vLLM's CPU engine in the oracle venv (float32, its
    own defaults otherwise); None when that venv is not there or vLLM fails."""
    if not VLLM_PYTHON.exists():
        return None
    args = {"model": str(path), "prompts": prompts, "new_tokens": case.new_tokens, "max_model_len": 4096,
            "kv_cache_memory_bytes": KV_BYTES}
    proc = subprocess.run([str(VLLM_PYTHON), str(HERE / "vllm_generate.py"), json.dumps(args)],
                          capture_output=True, text=True, timeout=900)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("VLLM_RESULT ")]
    if proc.returncode or not lines:
        print(f"vLLM failed on case {case.name} (rc {proc.returncode}): {proc.stderr[-500:]}", flush=True)
        return None
    result = json.loads(lines[-1][len("VLLM_RESULT "):])
    return case.new_tokens * len(prompts) / result["generate_s"], result["tokens"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", default="a,b,c")
    parser.add_argument("--vllm", action="store_true", help="also time vLLM's CPU engine (oracle venv), once per case")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.cases.split(","):
            case = CASES[key]
            path = save_model(case, Path(tmp) / key)
            prompts = prompts_for(case)
            new = case.new_tokens * len(prompts)
            gen: dict[str, list[float]] = {"hkv": [], "hf": []}
            e2e: dict[str, list[float]] = {"hkv": [], "hf": []}
            held = {}
            sides = [("hkv", run_hkv), ("hf", run_hf)]
            for repeat in range(args.repeats):
                for side, fn in sides if repeat % 2 == 0 else sides[::-1]:
                    tokens, gen_s, e2e_s, held[side] = fn(path, prompts, case)
                    gen[side].append(new / gen_s)
                    e2e[side].append(new / e2e_s)
                    held.setdefault(side + "_tokens", tokens)
                assert held["hkv_tokens"] == held["hf_tokens"], f"case {key}: greedy tokens differ"
            g = {s: statistics.median(v) for s, v in gen.items()}
            e = {s: statistics.median(v) for s, v in e2e.items()}
            gen_ratios = sorted(a / b for a, b in zip(gen["hkv"], gen["hf"]))
            e2e_ratios = sorted(a / b for a, b in zip(e2e["hkv"], e2e["hf"]))
            print(f"case {case.name}: generation hkv {g['hkv']:.1f} tok/s, hf {g['hf']:.1f} tok/s; "
                  f"end to end hkv {e['hkv']:.1f}, hf {e['hf']:.1f}; KV bytes held hkv "
                  f"{held['hkv']:,} (peak), hf {held['hf']:,}", flush=True)
            if args.vllm:
                vllm = run_vllm(path, prompts, case)
                if vllm is not None:
                    same = sum(a == b for a, b in zip(vllm[1], held["hf_tokens"]))
                    print(f"case {case.name}: vLLM CPU generation {vllm[0]:.1f} tok/s "
                          f"({same}/{len(prompts)} prompts with HF's greedy tokens); ratio hkv/vllm "
                          f"{g['hkv'] / vllm[0]:.2f}x", flush=True)
            results.append((key, gen_ratios, e2e_ratios, held["hf"] / max(1, held["hkv"])))
    for key, gen_ratios, e2e_ratios, bytes_ratio in results:
        print(f"ratio hkv/hf generation {key}: {statistics.median(gen_ratios):.2f}x "
              f"(repeats {gen_ratios[0]:.2f}-{gen_ratios[-1]:.2f})")
        print(f"ratio hkv/hf end to end {key}: {statistics.median(e2e_ratios):.2f}x "
              f"(repeats {e2e_ratios[0]:.2f}-{e2e_ratios[-1]:.2f})")
        print(f"ratio hf/hkv KV bytes {key}: {bytes_ratio:.2f}x")


if __name__ == "__main__":
    main()
