"""Differential test: hkv's KVCacheManager against vLLM 0.32's own KVCacheManager, op by op.

Both managers get the same `vllm` layout from hkv's planner (same groups, block size and
num_blocks, a pool small enough that blocks are evicted and requests are refused) and the same
seeded trace, one operation at a time: get_computed_blocks + allocate_slots (admission, the
whole prompt or its first chunk), a prefill chunk, a decode step (append a token, allocate_slots
for it, sometimes with lookahead slots), free (finished, aborted) and preemption (free, then
re-admission with every token so far). hkv runs `CacheConfig.vllm()` (plain LRU, dense sliding
retention, caching at schedule time, duplicate cached blocks kept, vLLM 0.32's free order).

After EVERY operation: equal hit lengths, equal allocate success, equal free-block counts and
equal block tables (block ids included) of the request operated on. Every CHECK_EVERY operations
and at the end: the whole free queue in the same order, the same set of hashed blocks, every live
request's tables, and hkv's own integrity check.

vLLM is built like benchmarks/bench_manager.py's VllmDriver: a KVCacheConfig of the layout's
groups (prefix_cache_retention_interval None: dense), scheduler block = lcm of the block sizes,
hash block = gcd, sha256 hashes. Two vLLM free paths: KVCacheManager.free (group by group,
FreeOrder.GROUP_BY_GROUP) and the deferred one of its scheduler (pop_blocks_for_free, then
block_pool.free_blocks(reversed(...)); FreeOrder.REQUEST_TAIL_FIRST).

Run in the oracle venv: .venv-vllm/bin/python -m pytest tests/oracle/vllm_side/test_manager_differential.py
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from dataclasses import dataclass, field
from itertools import chain
from math import gcd, lcm
from pathlib import Path

import pytest
import torch
from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.layout import Layout
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.kv_cache_manager import KVCacheManager
from hkv.runtime.kv_cache.vllm_compat import FreeOrder
from hkv.runtime.request import Request
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import sha256
from vllm.v1.core.kv_cache_manager import KVCacheManager as VllmKVCacheManager
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.kv_cache_interface import (
    ChunkedLocalAttentionSpec,
    CircularBufferSpec,
    FullAttentionSpec,
    KVCacheConfig,
    KVCacheGroupSpec,
    SlidingWindowSpec,
)
from vllm.v1.request import Request as VllmRequest

CHECK_EVERY = 64  # operations between whole-state comparisons
STEP5_TINY = Path(__file__).resolve().parents[2] / "data" / "configs" / "step5_tiny.json"


@dataclass(frozen=True)
class Case:
    model: str
    max_model_len: int
    num_blocks: int  # pool size asked of the planner (through the KV memory budget)
    num_requests: int
    max_active: int
    window: int | None = None  # replaces every sliding window (short traces cross it often)
    chunk: int | None = None  # replaces every attention chunk
    kinds: frozenset[CacheKind] = frozenset()  # expected kinds (guards the layout)
    min_prompt: int = 1
    vllm_version: str = "0.32.0"  # the release the layout follows (a 0.33 model: its packed groups)


CASES = {
    # 6 sliding groups (window 1024) + 1 full: vLLM's N-type hybrid coordinator
    "gemma-3-27b-it": Case("gemma-3-27b-it", 4096, 2600, 1200, 10,
                           kinds=frozenset({CacheKind.SLIDING, CacheKind.FULL})),
    # window 100: not a multiple of the block size (hit needs cdiv(99, 16) = 7 blocks)
    "gemma-3-27b-it-w100": Case("gemma-3-27b-it", 2048, 700, 1200, 8, window=100,
                                kinds=frozenset({CacheKind.SLIDING, CacheKind.FULL})),
    # 1 sliding (window 128) + 1 full: the "simple hybrid" one-pass lookup
    "gpt-oss-120b": Case("gpt-oss-120b", 4096, 1400, 1500, 10,
                         kinds=frozenset({CacheKind.SLIDING, CacheKind.FULL})),
    # 3 chunked (chunk 8192) + 1 full, prompts crossing the chunk boundary
    "llama-4-scout": Case("llama-4-scout-17b-16e-instruct", 16384, 5000, 300, 4, min_prompt=6000,
                          kinds=frozenset({CacheKind.CHUNKED, CacheKind.FULL})),
    # same groups, chunk 256: many chunk boundaries and chunk-start hits
    "llama-4-scout-c256": Case("llama-4-scout-17b-16e-instruct", 4096, 1500, 1200, 8, chunk=256,
                               kinds=frozenset({CacheKind.CHUNKED, CacheKind.FULL})),
    # full attention only: vLLM's unitary coordinator
    "llama-3.1-8b": Case("llama-3.1-8b-instruct", 4096, 700, 1500, 10, kinds=frozenset({CacheKind.FULL})),
    # sliding only (window 256): unitary coordinator on a sliding group
    "mistral-7b-w256": Case("mistral-7b-v0.1", 4096, 400, 1500, 10, window=256,
                            kinds=frozenset({CacheKind.SLIDING})),
    # Step5 (vLLM 0.33; 0.32's managers are the same): 3 sliding (window 64) + K/V with summaries +
    # CSA tail rings (CircularBufferManager: one block per request, never cached, skipped by lookups)
    "step5-tiny": Case(str(STEP5_TINY), 2048, 600, 1200, 8, vllm_version="0.33.0",
                       kinds=frozenset({CacheKind.SLIDING, CacheKind.FULL, CacheKind.CIRCULAR})),
}


# ---- layout ------------------------------------------------------------------------------------


def build_layout(case: Case) -> Layout:
    model = load_model_spec(case.model)

    def planned(kv_bytes: int) -> Layout:
        cfg = PlanConfig(available_kv_memory_bytes=kv_bytes, max_model_len=case.max_model_len,
                         max_num_batched_tokens=2048, primary_layout="vllm", vllm_version=case.vllm_version)
        return plan(model, cfg).reports["vllm"].layout

    probe = planned(2**30)
    (pool,) = probe.pools
    layout = planned(case.num_blocks * pool.bytes_per_block)
    assert abs(layout.pools[0].num_blocks - case.num_blocks) <= 2, layout.pools
    assert {g.kind for g in layout.groups} == case.kinds, [g.kind for g in layout.groups]
    if case.window is not None or case.chunk is not None:
        groups = []
        for g in layout.groups:
            if g.kind is CacheKind.SLIDING and case.window is not None:
                g = dataclasses.replace(g, spec=dataclasses.replace(g.spec, window_len=case.window))
            if g.kind is CacheKind.CHUNKED and case.chunk is not None:
                g = dataclasses.replace(g, spec=dataclasses.replace(g.spec, chunk_len=case.chunk))
            groups.append(g)
        layout = dataclasses.replace(layout, groups=tuple(groups))
    return layout


def vllm_manager(layout: Layout) -> tuple[VllmKVCacheManager, object]:
    init_none_hash(sha256)
    groups = []
    for g in layout.groups:
        kw = {"block_size": g.block_size, "num_kv_heads": g.spec.num_kv_heads, "head_size": g.spec.head_dim,
              "dtype": torch.bfloat16}
        if g.kind is CacheKind.SLIDING:
            spec = SlidingWindowSpec(**kw, sliding_window=g.spec.window_len)
        elif g.kind is CacheKind.CHUNKED:
            spec = ChunkedLocalAttentionSpec(**kw, attention_chunk_size=g.spec.chunk_len)
        elif g.kind is CacheKind.CIRCULAR:
            spec = CircularBufferSpec(**kw)
        else:
            assert g.kind is CacheKind.FULL, g.kind
            spec = FullAttentionSpec(**kw)
        groups.append(KVCacheGroupSpec(list(g.layer_names), spec))
    config = KVCacheConfig(num_blocks=layout.pools[0].num_blocks, kv_cache_tensors=[], kv_cache_groups=groups)
    assert config.prefix_cache_retention_interval is None  # dense retention = SlidingRetention.ALL
    sizes = [g.block_size for g in layout.groups]
    manager = VllmKVCacheManager(config, max_model_len=layout.max_model_len, scheduler_block_size=lcm(*sizes),
                                 hash_block_size=gcd(*sizes), max_in_flight_tokens=layout.in_flight_tokens,
                                 enable_caching=True)
    return manager, get_request_block_hasher(gcd(*sizes), sha256)


# ---- trace ---------------------------------------------------------------------------------------


@dataclass
class Live:
    """One request in both managers."""

    hkv: Request
    vllm: VllmRequest
    output: list[int]
    emitted: int = 0  # output tokens appended so far
    preemptions: int = 0
    retries: int = 0


@dataclass
class Counters:
    ops: int = 0
    admitted: int = 0
    refused: int = 0
    hits: int = 0
    hit_tokens: int = 0
    resend_hits: int = 0  # hits of a request whose prompt is cached whole (capped at num_tokens - 1)
    chunks: int = 0  # prefill chunks after the first
    decodes: int = 0
    lookaheads: int = 0
    decode_failures: int = 0
    preemptions: int = 0
    aborts: int = 0
    finished: int = 0
    kinds: dict[str, int] = field(default_factory=dict)


def make_prompts(rng: random.Random, case: Case) -> list[tuple[str, list[int], list[int]]]:
    """(kind, prompt, output) per request: shared system prompts, sessions resending their
    history, exact resends, truncated prefixes, fresh, tiny and oversized prompts."""
    limit = case.max_model_len
    next_token = [1000]

    def fresh(n: int) -> list[int]:
        start = next_token[0]
        next_token[0] += n
        return list(range(start, start + n))

    lo = max(case.min_prompt, 1)
    hi = limit - 64
    span = hi - lo
    # Lengths on and off block boundaries.
    systems = [fresh(max(1, lo + int(span * f)) // 16 * 16 + extra)
               for f, extra in ((0.05, 0), (0.15, 7), (0.3, 0), (0.45, 15))]
    history: list[list[int]] = []
    prompts = []
    for _ in range(case.num_requests):
        kind = rng.choices(["system", "session", "resend", "prefix", "fresh", "tiny", "huge"],
                           weights=[30, 30, 10, 8, 10, 6, 6])[0]
        if kind == "session" and history:
            prompt = rng.choice(history) + fresh(rng.randint(1, 200))
        elif kind == "resend" and history:
            prompt = list(rng.choice(history))
        elif kind == "prefix" and history:
            base = rng.choice(history)
            prompt = base[:rng.randint(1, len(base))]
        elif kind == "tiny":
            prompt = fresh(rng.randint(1, 20)) if case.min_prompt <= 20 else fresh(lo)
        elif kind == "huge":
            prompt = fresh(rng.randint(hi - 200, hi))
        elif kind == "fresh":
            prompt = fresh(rng.randint(lo, hi))
        else:
            kind = "system"
            prompt = rng.choice(systems) + fresh(rng.randint(1, 300))
        if len(prompt) > hi:
            prompt = prompt[:hi]
        if len(prompt) < lo:
            prompt = prompt + fresh(lo - len(prompt))
        output = fresh(rng.randint(1, 48))
        prompts.append((kind, prompt, output))
        history.append(prompt + output)
        if len(history) > 40:
            history.pop(rng.randrange(len(history)))
    return prompts


# ---- lockstep --------------------------------------------------------------------------------------


class Lockstep:
    def __init__(self, layout: Layout, free_path: str) -> None:
        order = FreeOrder.GROUP_BY_GROUP if free_path == "free" else FreeOrder.REQUEST_TAIL_FIRST
        self.hkv = KVCacheManager(layout, CacheConfig.vllm(free_order=order))
        self.vllm, self.hasher = vllm_manager(layout)
        self.free_path = free_path
        self.hkv_pool = self.hkv.pools[layout.pools[0].pool_id]
        self.live: dict[str, Live] = {}
        self.n = Counters()
        self.last = ""

    # -- checks --

    def _fail(self, message: str) -> None:
        pytest.fail(f"op {self.n.ops} ({self.last}): {message}")

    def _tables(self, live: Live) -> None:
        # A circular group: vLLM keeps the lone ring block, hkv a positional table (null but the ring).
        ours = [[b for b in t if b != NULL_BLOCK_ID] if g.kind is CacheKind.CIRCULAR else list(t)
                for g, t in zip(self.hkv.layout.groups, self.hkv.block_ids(live.hkv), strict=True)]
        theirs = [list(t) for t in self.vllm.get_block_ids(live.vllm.request_id)]
        if ours != theirs:
            diff = next(g for g, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b)
            self._fail(f"group {diff} block table: hkv {ours[diff]} != vLLM {theirs[diff]}")

    def _after(self, what: str, ours: object, theirs: object, live: Live | None) -> None:
        self.n.ops += 1
        self.last = what
        if ours != theirs:
            self._fail(f"hkv returned {ours}, vLLM {theirs}")
        free_ours = self.hkv_pool.num_free_blocks
        free_theirs = self.vllm.block_pool.get_num_free_blocks()
        if free_ours != free_theirs:
            self._fail(f"free blocks: hkv {free_ours} != vLLM {free_theirs}")
        if live is not None and live.hkv.request_id in self.live:
            self._tables(live)
        if self.n.ops % CHECK_EVERY == 0:
            self.check_all()

    def check_all(self) -> None:
        ours = list(chain.from_iterable(self.hkv_pool.free_segments().values()))
        theirs = [b.block_id for b in self.vllm.block_pool.free_block_queue.get_all_free_blocks()]
        if ours != theirs:
            first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            self._fail(f"free queues differ from position {first}: hkv {ours[first:first + 8]} "
                       f"vLLM {theirs[first:first + 8]}")
        hashed_ours = {b for b, h in enumerate(self.hkv_pool.block_hash) if h is not None}
        hashed_theirs = {b.block_id for b in self.vllm.block_pool.blocks if b.block_hash is not None}
        if hashed_ours != hashed_theirs:
            self._fail(f"hashed blocks: only hkv {sorted(hashed_ours - hashed_theirs)[:8]}, "
                       f"only vLLM {sorted(hashed_theirs - hashed_ours)[:8]}")
        for live in self.live.values():
            self._tables(live)
        self.hkv.check_integrity()

    # -- operations --

    def admit(self, live: Live, kind: str, chunk: int) -> bool:
        """Lookup, then allocate the hit plus at most `chunk` prompt tokens."""
        hit = self.hkv.get_computed_blocks(live.hkv)
        blocks, num_hit = self.vllm.get_computed_blocks(live.vllm)[:2]
        self._after(f"lookup {live.hkv.request_id} ({kind}, {live.hkv.num_tokens} tokens)", hit.num_tokens, num_hit, None)
        num_tokens = live.hkv.num_tokens
        num_new = min(num_tokens - hit.num_tokens, chunk)
        ours = self.hkv.allocate_slots(live.hkv, num_new, hit.num_tokens, hit)
        theirs = self.vllm.allocate_slots(live.vllm, num_new, num_new_computed_tokens=num_hit,
                                          new_computed_blocks=blocks)
        ok = ours is not None
        if ok:
            self.live[live.hkv.request_id] = live
            live.hkv.num_computed_tokens = live.vllm.num_computed_tokens = num_hit + num_new
            self.n.admitted += 1
            if num_hit:
                self.n.hits += 1
                self.n.hit_tokens += num_hit
                self.n.resend_hits += num_hit >= (num_tokens - 1) // 16 * 16
        else:
            self.n.refused += 1
        self._after(f"admit {live.hkv.request_id}", ok, theirs is not None, live)
        return ok

    def step(self, live: Live, chunk: int, lookahead: int) -> bool:
        """The next prefill chunk (at most `chunk` tokens) if the prompt is not computed yet,
        else one decode token (plus `lookahead` draft slots)."""
        remaining = live.hkv.num_tokens - live.hkv.num_computed_tokens
        if remaining:
            num_new, lookahead = min(remaining, chunk), 0
            what = f"chunk {live.hkv.request_id} +{num_new}"
        else:
            token = live.output[live.emitted]
            live.emitted += 1
            live.hkv.append_output_token(token)
            live.vllm.append_output_token_ids(token)
            num_new = 1
            what = f"decode {live.hkv.request_id} (+{lookahead} lookahead)"
        ours = self.hkv.allocate_slots(live.hkv, num_new, num_lookahead_tokens=lookahead)
        theirs = self.vllm.allocate_slots(live.vllm, num_new, num_lookahead_tokens=lookahead)
        ok = ours is not None
        if ok:
            live.hkv.num_computed_tokens += num_new
            live.vllm.num_computed_tokens += num_new
            if remaining:
                self.n.chunks += 1
            else:
                self.n.decodes += 1
                self.n.lookaheads += lookahead > 0
        else:
            self.n.decode_failures += 1
        self._after(what, ok, theirs is not None, live)
        return ok

    def free(self, live: Live, why: str) -> None:
        del self.live[live.hkv.request_id]
        self.hkv.free(live.hkv)
        if self.free_path == "free":
            self.vllm.free(live.vllm)
        else:
            self.vllm.block_pool.free_blocks(reversed(self.vllm.pop_blocks_for_free(live.vllm)))
        self._after(f"free {live.hkv.request_id} ({why})", None, None, None)

    def preempt(self, live: Live) -> None:
        """Recompute preemption: free, then wait with every token so far as its prompt."""
        self.free(live, "preempted")
        live.hkv.num_computed_tokens = live.vllm.num_computed_tokens = 0
        live.preemptions += 1
        self.n.preemptions += 1


def run_trace(case: Case, free_path: str, seed: int) -> Counters:
    layout = build_layout(case)
    rng = random.Random(seed)
    step = Lockstep(layout, free_path)
    pending: deque[tuple[str, Live]] = deque()
    for i, (kind, prompt, output) in enumerate(make_prompts(rng, case)):
        hkv_req = Request(str(i), prompt, max_output_len=len(output))
        vllm_req = VllmRequest(request_id=str(i), prompt_token_ids=prompt,
                               sampling_params=SamplingParams(max_tokens=len(output)),
                               pooling_params=None, block_hasher=step.hasher)
        pending.append((kind, Live(hkv_req, vllm_req, output)))
        step.n.kinds[kind] = step.n.kinds.get(kind, 0) + 1
    active: list[Live] = []

    def chunk() -> int:
        return rng.choice([64, 512, 2048, 1 << 20, 1 << 20])

    while pending or active:
        if pending and len(active) < case.max_active and (not active or rng.random() < 0.3):
            kind, live = pending.popleft()
            if step.admit(live, kind, chunk()):
                active.append(live)
            elif live.retries < 1:  # refused: wait and retry once, later
                live.retries += 1
                pending.append((kind, live))
            continue
        live = active[rng.randrange(len(active))]
        r = rng.random()
        if r < 0.01:
            active.remove(live)
            step.n.aborts += 1
            step.free(live, "aborted")
        elif r < 0.02 and live.preemptions < 2:
            active.remove(live)
            step.preempt(live)
            pending.appendleft(("preempted", live))
        elif not step.step(live, chunk(), rng.choice([0, 0, 0, 2, 5])):  # no room: preempted like vLLM's scheduler does
            active.remove(live)
            if live.preemptions < 2:
                step.preempt(live)
                pending.append(("preempted", live))
            else:
                step.free(live, "given up")
        elif live.emitted == len(live.output) and live.hkv.num_computed_tokens == live.hkv.num_tokens:
            active.remove(live)
            step.n.finished += 1
            step.free(live, "finished")
    step.check_all()
    assert step.hkv_pool.num_free_blocks == step.hkv_pool.num_usable_blocks
    step.n.kinds["evictions"] = step.hkv_pool.num_evictions
    step.n.kinds["early_releases"] = sum(m.num_early_released_blocks for m in step.hkv.coordinator.managers)
    return step.n


@pytest.mark.oracle
@pytest.mark.parametrize("free_path", ["free", "deferred"])
@pytest.mark.parametrize("case_id", list(CASES))
def test_same_hits_free_counts_and_tables_as_vllm(case_id: str, free_path: str) -> None:
    case = CASES[case_id]
    n = run_trace(case, free_path, seed=sum(map(ord, case_id)))
    print(f"{case_id}/{free_path}: {n}")
    # The trace must have exercised what it is meant to.
    assert n.hits > 10 and n.resend_hits > 0, n
    assert n.refused > 0 and n.decode_failures > 0 and n.preemptions > 0 and n.aborts > 0, n
    assert n.chunks > 0 and n.lookaheads > 0, n
    assert n.kinds["evictions"] > 100, n
    if case.kinds != {CacheKind.FULL}:
        assert n.kinds["early_releases"] > 0, n
