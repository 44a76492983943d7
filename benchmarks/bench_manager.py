"""KV cache manager throughput: hkv vs vLLM's own KVCacheManager on one seeded trace, side by side.

Run with the oracle environment to get both (vLLM 0.32 CPU build, same process, same trace):
    .venv-vllm/bin/python benchmarks/bench_manager.py [--requests 20000]
Without vLLM installed it times hkv alone.

The trace (seeded): requests share one of 8 system prompts, half continue a session (they resend
the previous turn's prompt and output), prompts add 64-512 new tokens, outputs are 16-64 tokens.
64 requests are active at a time; every "step" gives each active request one decode token. Both
managers run the `vllm` layout of the model (same groups, block size and num_blocks), so they do
the same work; an operation is one get_computed_blocks, allocate_slots or free call.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import deque
from dataclasses import dataclass

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.layout import Layout
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

MAX_MODEL_LEN = 16384
ACTIVE = 64


@dataclass(frozen=True)
class TraceRequest:
    prompt: list[int]
    output: list[int]


def make_trace(num_requests: int, seed: int = 0) -> list[TraceRequest]:
    rng = random.Random(seed)
    next_token = [1000]

    def fresh(n: int) -> list[int]:
        start = next_token[0]
        next_token[0] += n
        return list(range(start, start + n))

    systems = [fresh(rng.choice((512, 1024, 2048))) for _ in range(8)]
    sessions: list[list[int]] = []
    trace = []
    for _ in range(num_requests):
        if sessions and rng.random() < 0.5:
            i = rng.randrange(len(sessions))
            history = sessions[i]
        else:
            i, history = None, list(rng.choice(systems))
        prompt = history + fresh(rng.randint(64, 512))
        if len(prompt) > MAX_MODEL_LEN - 100:  # restart overly long conversations
            prompt = list(rng.choice(systems)) + fresh(rng.randint(64, 512))
        output = fresh(rng.randint(16, 64))
        trace.append(TraceRequest(prompt, output))
        if i is None:
            sessions.append(prompt + output)
            if len(sessions) > 256:
                sessions.pop(0)
        else:
            sessions[i] = prompt + output
    return trace


class _Driver:
    """Decode and free are the same calls on both managers; only appending a token differs."""

    manager: object

    def append_token(self, req, token: int) -> None:
        raise NotImplementedError

    def decode(self, req, token: int) -> bool:
        self.append_token(req, token)
        if self.manager.allocate_slots(req, 1) is None:
            return False
        req.num_computed_tokens += 1
        return True

    def free(self, req) -> None:
        self.manager.free(req)


class HkvDriver(_Driver):
    name = "hkv"

    def __init__(self, layout: Layout) -> None:
        from hkv.runtime.kv_cache.cache_config import CacheConfig
        from hkv.runtime.kv_cache.kv_cache_manager import KVCacheManager
        from hkv.runtime.request import Request

        # vLLM-compatible configuration (plain LRU, dense retention, caching at schedule time,
        # duplicates kept, vLLM 0.32's free order): both managers do the same work on the trace
        self.manager = KVCacheManager(layout, CacheConfig.vllm())
        self._request_cls = Request

    def admit(self, rid: int, tr: TraceRequest):
        req = self._request_cls(str(rid), tr.prompt, max_output_len=len(tr.output))
        hit = self.manager.get_computed_blocks(req)
        if self.manager.allocate_slots(req, len(tr.prompt) - hit.num_tokens, hit.num_tokens, hit) is None:
            return None, hit.num_tokens
        req.num_computed_tokens = len(tr.prompt)
        return req, hit.num_tokens

    def append_token(self, req, token: int) -> None:
        req.append_output_token(token)


class VllmDriver(_Driver):
    name = "vllm"

    def __init__(self, layout: Layout) -> None:
        import torch
        from vllm.sampling_params import SamplingParams
        from vllm.utils.hashing import sha256
        from vllm.v1.core.kv_cache_manager import KVCacheManager
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
        from vllm.v1.kv_cache_interface import (
            FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec, SlidingWindowSpec,
        )
        from vllm.v1.request import Request

        init_none_hash(sha256)
        groups = []
        for g in layout.groups:
            kw = dict(block_size=g.block_size, num_kv_heads=g.spec.num_kv_heads, head_size=g.spec.head_dim,
                      dtype=torch.bfloat16)
            spec = (SlidingWindowSpec(**kw, sliding_window=g.spec.window_len) if g.spec.window_len
                    else FullAttentionSpec(**kw))
            groups.append(KVCacheGroupSpec(list(g.layer_names), spec))
        config = KVCacheConfig(num_blocks=layout.pools[0].num_blocks, kv_cache_tensors=[], kv_cache_groups=groups)
        block_size = layout.groups[0].block_size
        self.manager = KVCacheManager(config, max_model_len=layout.max_model_len, scheduler_block_size=block_size,
                                      hash_block_size=block_size, max_in_flight_tokens=layout.in_flight_tokens,
                                      enable_caching=True)
        self._hasher = get_request_block_hasher(block_size, sha256)
        self._request_cls, self._params_cls = Request, SamplingParams

    def admit(self, rid: int, tr: TraceRequest):
        req = self._request_cls(request_id=str(rid), prompt_token_ids=tr.prompt,
                                sampling_params=self._params_cls(max_tokens=len(tr.output)),
                                pooling_params=None, block_hasher=self._hasher)
        blocks, num_hit = self.manager.get_computed_blocks(req)[:2]
        if self.manager.allocate_slots(req, len(tr.prompt) - num_hit, num_new_computed_tokens=num_hit,
                                       new_computed_blocks=blocks) is None:
            return None, num_hit
        req.num_computed_tokens = len(tr.prompt)
        return req, num_hit

    def append_token(self, req, token: int) -> None:
        req.append_output_token_ids(token)


def run(driver, trace: list[TraceRequest]) -> dict[str, float]:
    """Same control flow for every driver: ACTIVE requests in flight, one decode each per step."""
    pending = deque(enumerate(trace))
    active: list[tuple[object, TraceRequest, int]] = []
    ops = hits = rejected = 0
    start = time.perf_counter()
    while pending or active:
        while pending and len(active) < ACTIVE:
            rid, tr = pending.popleft()
            req, num_hit = driver.admit(rid, tr)
            ops += 2
            hits += num_hit
            if req is None:
                rejected += 1
                continue
            active.append((req, tr, 0))
        still = []
        for req, tr, emitted in active:
            ok = driver.decode(req, tr.output[emitted])
            ops += 1
            if not ok or emitted + 1 == len(tr.output):
                driver.free(req)
                ops += 1
                continue
            still.append((req, tr, emitted + 1))
        active = still
    wall = time.perf_counter() - start
    return {"ops": ops, "wall_s": wall, "ops_per_s": ops / wall, "hit_tokens": hits, "rejected": rejected}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--models", default="gemma-3-27b:64,gpt-oss-120b:8",
                        help="MODEL:KV_GIB,... (pools large enough that no allocation fails)")
    args = parser.parse_args()
    try:
        import vllm  # noqa: F401
        drivers = [HkvDriver, VllmDriver]
    except ImportError:
        print("vLLM not importable: timing hkv only (run with .venv-vllm/bin/python for the ratio)")
        drivers = [HkvDriver]
    trace = make_trace(args.requests)
    print(f"trace: {len(trace):,} requests, {sum(len(t.prompt) for t in trace):,} prompt tokens, "
          f"{sum(len(t.output) for t in trace):,} decode steps, {ACTIVE} active")
    for item in args.models.split(","):
        name, kv_gib = item.split(":")
        cfg = PlanConfig(available_kv_memory_bytes=int(float(kv_gib) * 2**30), max_model_len=MAX_MODEL_LEN,
                         max_num_batched_tokens=8192, primary_layout="vllm")
        layout = plan(load_model_spec(name), cfg).reports["vllm"].layout
        results = {}
        for driver_cls in drivers:
            results[driver_cls.name] = r = run(driver_cls(layout), trace)
            print(f"{name:>14} {driver_cls.name:>5}: {r['ops']:,} ops in {r['wall_s']:.2f} s = "
                  f"{r['ops_per_s']:,.0f} ops/s; hit tokens {r['hit_tokens']:,}; rejected {r['rejected']}")
        if "vllm" in results:
            ratio = results["hkv"]["ops_per_s"] / results["vllm"]["ops_per_s"]
            print(f"{name:>14} ratio hkv / vllm: {ratio:.2f}x  (blocks {layout.pools[0].num_blocks:,}, "
                  f"{len(layout.groups)} groups)")


if __name__ == "__main__":
    main()
