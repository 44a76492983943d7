"""The vLLM side of `hkv verify`: runs under an interpreter that has vLLM, imports only vLLM and the
standard library (hkv is not installed there), and does what hkv asks over a line protocol.

    python -P vllm_driver.py       (-P: the script's folder, hkv's cli/, must not shadow modules)

Every line for hkv starts with PROTOCOL_PREFIX and carries one JSON object; every other line on
stdout/stderr is vLLM's own log, which hkv parses. hkv writes one JSON object per line on stdin.

    driver -> {"event": "platform", "device_type": "cpu", "vllm_version": "0.32.0"}
    hkv    -> {"llm_args": {...}}                        keyword arguments of vllm.LLM
    driver -> {"event": "ready", ...}                    what the engine resolved (block size, ...)
    hkv    -> {"num_requests": N, "prompt_len": P, "output_len": O}      repeated
    driver -> {"event": "ran", "num_requests": N, "num_preemptions": K, "max_running": R, "run_s": S}
    hkv    -> {"stop": true}                             (or closes stdin)

A failure anywhere is {"event": "error", "stage": "import" | "start" | "run", "message": ...} and
exit status 1. The `__main__` guard is required: vLLM spawns its EngineCore process.
"""

from __future__ import annotations

import json
import random
import sys
import time
import traceback

PROTOCOL_PREFIX = "HKV_VERIFY "
PREEMPTIONS_METRIC = "vllm:num_preemptions"


def _send(event: str, **fields: object) -> None:
    print(PROTOCOL_PREFIX + json.dumps({"event": event, **fields}), flush=True)


def _receive() -> dict:
    line = sys.stdin.readline()
    return json.loads(line) if line.strip() else {"stop": True}


def _fail(stage: str, err: BaseException) -> None:
    traceback.print_exc()
    _send("error", stage=stage, message=f"{type(err).__name__}: {err}".strip())
    sys.exit(1)


def _num_preemptions(llm) -> int:
    """vLLM's cumulative preemption counter (summed over engines)."""
    return sum(int(m.value) for m in llm.get_metrics() if m.name == PREEMPTIONS_METRIC)


def _max_running(outputs) -> int:
    """Most requests running at once: the peak overlap of [first scheduled, last token] over the
    requests (engine-core timestamps; at a tie a request that ends frees its place first)."""
    events = sorted([(o.metrics.scheduled_ts, 1) for o in outputs] + [(o.metrics.last_token_ts, -1) for o in outputs])
    running = peak = 0
    for _ts, delta in events:
        running += delta
        peak = max(peak, running)
    return peak


def _prompts(num_requests: int, prompt_len: int, vocab_size: int, seed: int) -> list[list[int]]:
    """Random token ids per request: no two prompts share a block, so prefix caching shares nothing."""
    rng = random.Random(seed)
    return [[rng.randrange(3, vocab_size) for _ in range(prompt_len)] for _ in range(num_requests)]


def main() -> None:
    try:
        import vllm
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.platforms import current_platform
    except Exception as err:  # ImportError, or a broken torchvision beside vLLM's torch
        _fail("import", err)
    _send("platform", device_type=current_platform.device_type, vllm_version=vllm.__version__)

    args = _receive()
    if args.get("stop"):
        return
    try:
        t0 = time.time()
        llm = LLM(**args["llm_args"])
        vc = llm.llm_engine.vllm_config
        metric_names = {m.name for m in llm.get_metrics()}
        if PREEMPTIONS_METRIC not in metric_names:
            raise RuntimeError(f"this vLLM exposes no {PREEMPTIONS_METRIC} metric (disable_log_stats?)")
    except Exception as err:
        _fail("start", err)
    _send("ready", block_size=vc.cache_config.block_size, num_gpu_blocks=vc.cache_config.num_gpu_blocks,
          max_num_batched_tokens=vc.scheduler_config.max_num_batched_tokens,
          async_scheduling=vc.scheduler_config.async_scheduling,
          max_in_flight_tokens=vc.max_in_flight_tokens, max_model_len=vc.model_config.max_model_len,
          max_num_seqs=vc.scheduler_config.max_num_seqs,
          kv_cache_memory_bytes=vc.cache_config.kv_cache_memory_bytes,
          device_type=vc.device_config.device_type, start_s=round(time.time() - t0, 1))

    vocab_size = vc.model_config.get_vocab_size()
    while not (request := _receive()).get("stop"):
        try:
            n = request["num_requests"]
            llm.reset_prefix_cache()
            before = _num_preemptions(llm)
            t0 = time.time()
            params = SamplingParams(max_tokens=request["output_len"], temperature=0.0, ignore_eos=True,
                                    detokenize=False)
            prompts = [TokensPrompt(prompt_token_ids=ids)
                       for ids in _prompts(n, request["prompt_len"], vocab_size, seed=n)]
            outputs = llm.generate(prompts, params, use_tqdm=False)
            _send("ran", num_requests=n, num_preemptions=_num_preemptions(llm) - before,
                  max_running=_max_running(outputs), run_s=round(time.time() - t0, 1))
        except Exception as err:
            _fail("run", err)


if __name__ == "__main__":
    main()
