"""Start vLLM's real CPU engine on a saved model and report what its KV cache became.

    .venv-vllm/bin/python tests/oracle/vllm_side/run_engine.py '{"model": DIR, "max_model_len": 2048,
        "kv_cache_memory_bytes": 8388608, ...}'

Every other key of the JSON argument is passed to `vllm.LLM` as is (block_size,
max_num_batched_tokens, enable_prefix_caching, ...). The engine log goes to stdout/stderr as
usual; the last stdout line is `ORACLE_RESULT {json}` with the settings vLLM resolved (block
size, max_num_batched_tokens, async scheduling, device, num_gpu_blocks) and the greedy tokens of
one short prompt (proof that the engine really ran).

The `if __name__ == "__main__"` guard is required: vLLM spawns its EngineCore process.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    args = json.loads(sys.argv[1])
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    t0 = time.time()
    llm = LLM(skip_tokenizer_init=True, dtype="float32", enforce_eager=True, max_num_seqs=4,
              seed=0, **args)
    t1 = time.time()
    outs = llm.generate([TokensPrompt(prompt_token_ids=[5, 17, 42, 99, 7, 3])],
                        SamplingParams(max_tokens=4, temperature=0.0, detokenize=False, ignore_eos=True))
    vc = llm.llm_engine.vllm_config
    result = {
        "block_size": vc.cache_config.block_size,
        "user_specified_block_size": vc.cache_config.user_specified_block_size,
        "max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens,
        "async_scheduling": vc.scheduler_config.async_scheduling,
        "max_concurrent_batches": vc.max_concurrent_batches,
        "max_in_flight_tokens": vc.max_in_flight_tokens,
        "max_model_len": vc.model_config.max_model_len,
        "enable_prefix_caching": vc.cache_config.enable_prefix_caching,
        "kv_cache_memory_bytes": vc.cache_config.kv_cache_memory_bytes,
        "num_gpu_blocks": vc.cache_config.num_gpu_blocks,
        "device_type": vc.device_config.device_type,
        "tokens": list(outs[0].outputs[0].token_ids),
        "init_s": round(t1 - t0, 1),
    }
    print("ORACLE_RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
