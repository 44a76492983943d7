"""hkv's predicted vLLM start-up refusals (planner/startup/) against vLLM 0.32's own checks.

For each case hkv plans (`plan` + `vllm_startup`, vLLM 0.32.0 rules, an exact KV budget or hkv's
own H100 estimate of it), and vLLM's `get_kv_cache_configs` and `resolve_cudagraph_mode_and_sizes`
run on the same per-layer specs and the same available memory (startup_bridge). The first error
vLLM raises must be hkv's first error, text for text; where vLLM starts, hkv must too. The memory
check's pieces (null block held back, bytes one max-length request needs, estimated maximum model
length) are compared number for number, at budgets around hkv's threshold (one byte below it and
at it), far below it, at exactly the null block, one byte above it, and at nothing.

A wrong prediction must fail the comparison: `test_off_by_one_block_fails` moves hkv's estimated
length and its block count by one block and checks that the comparisons reject them.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import oracle_bridge as ob
import pytest
import startup_bridge as sb
from hkv.planner.plan import Plan, plan
from hkv.planner.plan_config import PlanConfig
from hkv.planner.startup import vllm_startup
from hkv.planner.startup.issue import StartupVerdict
from hkv.planner.startup.vllm_kv_need import VllmKvNeed

GIB = 2**30
MAX_NUM_BATCHED_TOKENS = 8192  # an H100's default, given to both sides
HYBRIDS = ("nemotron-3-nano-30b-a3b", "qwen3-next-80b-a3b")
ATTENTION = ("llama-3.1-8b-instruct", "gemma-3-27b-it")


@functools.cache
def model(name: str):
    return ob.load_model(name)


def scenario(name: str, available: int, max_model_len: int | None = None, *,
             prefix: bool = True) -> ob.Scenario:
    m = model(name)
    return ob.Scenario(available, max_model_len or m.max_model_len, MAX_NUM_BATCHED_TOKENS,
                       enable_prefix_caching=prefix)


def hkv_plan(name: str, sc: ob.Scenario, max_num_seqs: int = 1024, enforce_eager: bool = False) -> Plan:
    cfg = replace(ob.plan_config(sc), max_num_seqs=max_num_seqs, enforce_eager=enforce_eager)
    return plan(model(name), cfg)


def hkv_need(p: Plan) -> VllmKvNeed:
    return VllmKvNeed.of(p.reports["vllm"].layout, p.config.vllm_rules().version)


@functools.cache
def threshold(name: str, max_model_len: int | None, prefix: bool) -> int:
    """hkv's least available memory at which one max-length request passes vLLM's check."""
    sc = scenario(name, 64 * GIB, max_model_len, prefix=prefix)
    need = hkv_need(hkv_plan(name, sc))
    return need.available_for(sc.max_model_len)


def budgets(name: str, max_model_len: int | None = None, prefix: bool = True) -> dict[str, int]:
    t = threshold(name, max_model_len, prefix)
    bpb = hkv_need(hkv_plan(name, scenario(name, 64 * GIB, max_model_len, prefix=prefix))).bytes_per_block
    return {"at-threshold": t, "1B-below": t - 1, "half": t // 2 + 12345, "null-block": bpb,
            "null-block+1B": bpb + 1, "zero": 0}


def first_engine_error(name: str, sc: ob.Scenario, max_num_seqs: int,
                       enforce_eager: bool = False) -> str | None:
    mem = sb.memory_check(model(name), sc)
    if mem.error is not None:
        return mem.error
    assert mem.kv_cache_config is not None
    return sb.cudagraph_check(model(name), sc, mem.kv_cache_config, max_num_seqs, enforce_eager=enforce_eager)


def assert_same_verdict(verdict: StartupVerdict, engine_error: str | None) -> None:
    ours = verdict.first_error
    if engine_error is None:
        assert ours is None, f"vLLM starts; hkv predicts {ours.code}: {ours.message}"
        assert verdict.starts
        return
    assert ours is not None, f"vLLM raises {engine_error!r}; hkv predicts a start"
    assert ours.message == engine_error, f"\nhkv : {ours.message}\nvLLM: {engine_error}"


def assert_same_pieces(need: VllmKvNeed, max_model_len: int, available: int, mem: sb.MemoryCheck) -> None:
    assert need.check_bytes(available) == mem.check_bytes
    assert need.needed_bytes(max_model_len) == mem.needed_bytes
    assert need.estimated_max_len(mem.check_bytes, max_model_len) == mem.estimated_max_len


MEMORY_CASES = [(n, None, True, b) for n in (*HYBRIDS, *ATTENTION) for b in
                ("at-threshold", "1B-below", "half", "null-block", "null-block+1B", "zero")]
# Mamba "none" mode (prefix caching off): one state block a request, the attention block as given
MEMORY_CASES += [("qwen3-next-80b-a3b", 32768, False, b) for b in ("at-threshold", "1B-below", "half")]
# a sliding-window model at a length its windows do not cover
MEMORY_CASES += [("gemma-3-27b-it", 8192, True, b) for b in ("at-threshold", "1B-below", "half")]


@pytest.mark.parametrize("name, max_model_len, prefix, budget", MEMORY_CASES,
                         ids=[f"{n}-{ln or 'Lmax'}-{'pc' if p else 'nopc'}-{b}"
                              for n, ln, p, b in MEMORY_CASES])
def test_memory_check_equals_vllms(name: str, max_model_len: int | None, prefix: bool, budget: str) -> None:
    available = budgets(name, max_model_len, prefix)[budget]
    sc = scenario(name, available, max_model_len, prefix=prefix)
    p = hkv_plan(name, sc, max_num_seqs=1)  # one sequence: only the memory check can refuse
    mem = sb.memory_check(model(name), sc)
    assert_same_pieces(hkv_need(p), sc.max_model_len, available, mem)
    assert_same_verdict(vllm_startup(p), mem.error)
    # 1,024 sequences: a Mamba pool short of them is met only after the memory check passes
    assert_same_verdict(vllm_startup(hkv_plan(name, sc)), first_engine_error(name, sc, 1024))
    # the threshold is the threshold: vLLM starts at it, refuses one byte below
    if budget == "at-threshold":
        assert mem.error is None
    elif budget == "1B-below":
        assert mem.error is not None and mem.error.startswith("To serve at least one request")


@pytest.mark.parametrize("name", (*HYBRIDS, *ATTENTION))
def test_hkv_h100_estimate(name: str) -> None:
    """hkv's own estimate of the KV memory on an H100 (the plan a user gets without a budget),
    handed to vLLM as its available memory: the same first error, or both start."""
    m = model(name)
    max_len = 32768
    cfg = PlanConfig(gpu="h100", max_model_len=max_len, vllm_version=ob.ORACLE_VLLM_VERSION, block_size=16,
                     max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS, enable_prefix_caching=True,
                     primary_layout="vllm")
    p = plan(m, cfg)
    # qwen3-next's 80B of weights leave an H100 nothing (negative): vLLM's "No available memory"
    available = max(0, p.budget.available_bytes)
    sc = scenario(name, available, max_len)
    assert_same_verdict(vllm_startup(p), first_engine_error(name, sc, p.budget.max_num_seqs))


@pytest.mark.parametrize("name, max_model_len, prefix", [(n, None, True) for n in (*HYBRIDS, *ATTENTION)]
                         + [("qwen3-next-80b-a3b", 32768, False), ("gemma-3-27b-it", 8192, True)])
def test_max_model_len_fix_starts(name: str, max_model_len: int | None, prefix: bool) -> None:
    """hkv's fix "--max-model-len <= N" (N: the estimate in vLLM's message), given to vLLM with
    the same memory: it starts at N and refuses N + 1 (the estimate is the longest that fits)."""
    available = budgets(name, max_model_len, prefix)["half"]
    sc = scenario(name, available, max_model_len, prefix=prefix)
    error = vllm_startup(hkv_plan(name, sc, max_num_seqs=1)).first_error
    assert error is not None and error.fix is not None
    n = int(error.fix.split(" or ")[0].removeprefix("--max-model-len <= "))
    assert sb.memory_check(model(name), scenario(name, available, n, prefix=prefix)).error is None
    assert sb.memory_check(model(name), scenario(name, available, n + 1, prefix=prefix)).error is not None


def _mamba_cases() -> list[tuple[str, int, str, bool]]:
    out = []
    for name, available in (("nemotron-3-nano-30b-a3b", 12 * GIB + 4321),
                            ("qwen3-next-80b-a3b", 9 * GIB + 77)):
        for seqs in ("blocks-1", "blocks", "blocks+1", "1024"):
            out.append((name, available, seqs, False))
        out.append((name, available, "1024", True))
    return out


MAMBA_CASES = _mamba_cases()


@pytest.mark.parametrize("name, available, seqs, eager", MAMBA_CASES,
                         ids=[f"{n}-{s}{'-eager' if e else ''}" for n, _, s, e in MAMBA_CASES])
def test_mamba_check_equals_vllms(name: str, available: int, seqs: str, eager: bool) -> None:
    sc = scenario(name, available, 32768)
    blocks = hkv_plan(name, sc).reports["vllm"].layout.pools[0].num_blocks
    max_num_seqs = {"blocks-1": blocks - 1, "blocks": blocks, "blocks+1": blocks + 1, "1024": 1024}[seqs]
    p = hkv_plan(name, sc, max_num_seqs=max_num_seqs, enforce_eager=eager)
    mem = sb.memory_check(model(name), sc)
    assert mem.error is None and mem.kv_cache_config is not None
    assert mem.kv_cache_config.num_blocks == blocks
    engine = sb.cudagraph_check(model(name), sc, mem.kv_cache_config, max_num_seqs, enforce_eager=eager)
    assert_same_verdict(vllm_startup(p), engine)
    assert (engine is not None) is (max_num_seqs > blocks and not eager)


@pytest.mark.parametrize("name", ATTENTION)
def test_mamba_check_spares_attention_models(name: str) -> None:
    """More sequences than blocks: vLLM's check needs a Mamba layer; hkv's too."""
    sc = scenario(name, 4 * GIB + 99, 8192)
    blocks = hkv_plan(name, sc).reports["vllm"].layout.pools[0].num_blocks
    p = hkv_plan(name, sc, max_num_seqs=blocks + 1)
    assert_same_verdict(vllm_startup(p), first_engine_error(name, sc, blocks + 1))


def test_off_by_one_block_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prediction one block off is caught by the same comparisons."""
    # the estimated maximum model length, one block short
    name = "llama-3.1-8b-instruct"
    available = budgets(name)["half"]
    sc = scenario(name, available)
    p = hkv_plan(name, sc, max_num_seqs=1)
    mem = sb.memory_check(model(name), sc)
    assert_same_verdict(vllm_startup(p), mem.error)
    block = p.reports["vllm"].layout.groups[0].block_size
    right = VllmKvNeed.estimated_max_len
    monkeypatch.setattr(VllmKvNeed, "estimated_max_len", lambda self, c, m: right(self, c, m) - block)
    with pytest.raises(AssertionError, match="estimated maximum model length"):
        assert_same_verdict(vllm_startup(p), mem.error)
    with pytest.raises(AssertionError):
        assert_same_pieces(hkv_need(p), sc.max_model_len, available, mem)
    monkeypatch.undo()
    # the Mamba pool, one block short
    name = "nemotron-3-nano-30b-a3b"
    sc = scenario(name, 12 * GIB + 4321, 32768)
    p = hkv_plan(name, sc)
    mem = sb.memory_check(model(name), sc)
    engine = sb.cudagraph_check(model(name), sc, mem.kv_cache_config, 1024)
    assert_same_verdict(vllm_startup(p), engine)
    right_blocks = VllmKvNeed.num_blocks
    monkeypatch.setattr(VllmKvNeed, "num_blocks", lambda self, a: right_blocks(self, a) - 1)
    with pytest.raises(AssertionError, match="exceeds available Mamba cache blocks"):
        assert_same_verdict(vllm_startup(p), engine)
