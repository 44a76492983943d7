"""Greedy generation with vLLM's CPU engine, timed; run inside the oracle venv by bench_run.py.

    .venv-vllm/bin/python benchmarks/vllm_generate.py '{"model": DIR, "prompts": [[...]], "new_tokens": 64,
        "max_model_len": 4096, "kv_cache_memory_bytes": 536870912}'

Prints one line `VLLM_RESULT {"tokens": [[...]], "generate_s": ..., "init_s": ...}` on stdout.
The `__main__` guard is required: vLLM spawns its engine core process.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    args = json.loads(sys.argv[1])
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    t0 = time.perf_counter()
    llm = LLM(model=args["model"], skip_tokenizer_init=True, dtype="float32", seed=0,
              max_model_len=args["max_model_len"], kv_cache_memory_bytes=args["kv_cache_memory_bytes"],
              max_num_seqs=max(4, len(args["prompts"])))
    t1 = time.perf_counter()
    params = SamplingParams(max_tokens=args["new_tokens"], temperature=0.0, ignore_eos=True, detokenize=False)
    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in args["prompts"]], params, use_tqdm=False)
    t2 = time.perf_counter()
    result = {"tokens": [list(o.outputs[0].token_ids) for o in outs], "generate_s": t2 - t1, "init_s": t1 - t0}
    print("VLLM_RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
