"""The live run on hkv's Triton kernels (the CPU interpreter here, compiled on a GPU machine).

TRITON_INTERPRET must be set before the kernel modules are imported (they are imported lazily,
on the first Triton call); when another test imported them compiled, this module is skipped.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("triton")

from hkv.runtime.live.live_run import generate  # noqa: E402
from hkv.runtime.live.live_setup import RunOptions, load_runner, open_model, plan_run  # noqa: E402
from hkv.runtime.live.run_config import RunConfig  # noqa: E402

from live.tiny_models import load_reference, random_prompts, reference_greedy, save_tiny_model  # noqa: E402


def interpreted_kernels() -> bool:
    from hkv.kernels.paged_attention import _paged_attention_kernel
    from hkv.kernels.store_kv import _store_kv_kernel

    return all(type(k).__name__ == "InterpretedFunction" for k in (_paged_attention_kernel, _store_kv_kernel))


def run_on_triton(path, monkeypatch):
    """Two prompts (19 and 11 tokens, 4 new each) through hkv run with HKV_ATTENTION=triton
    (skipped unless the kernels are the interpreter's)."""
    if os.environ.get("TRITON_INTERPRET") != "1" or not interpreted_kernels():
        pytest.skip("the Triton kernels were imported compiled; this CPU test needs the interpreter")
    monkeypatch.setenv("HKV_ATTENTION", "triton")
    files = open_model(str(path))
    the_plan = plan_run(files, RunOptions(block_size=4, max_num_batched_tokens=16, max_model_len=64), 1 << 20)
    runner = load_runner(files, the_plan, torch.device("cpu"))
    prompts = random_prompts((19, 11))
    return prompts, generate(runner, prompts, RunConfig(max_new_tokens=4, max_num_batched_tokens=16))


@pytest.mark.parametrize("family", ["gpt_oss", "gemma2"])  # sinks + window; softcap + window
def test_triton_kernels_match_transformers(family, tmp_path, monkeypatch):
    path = save_tiny_model(family, tmp_path, num_hidden_layers=2)
    prompts, outcome = run_on_triton(path, monkeypatch)
    reference = load_reference(path)
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, 4)


def test_triton_kernels_run_a_recurrent_hybrid(tmp_path, monkeypatch):
    """Bamba (Mamba2 + attention) with its attention layers on the Triton kernels: the states
    take the same path as on the torch kernels, and the tokens equal generate()'s."""
    from live.tiny_hybrids import reference_generate, save_hybrid

    path = save_hybrid("bamba", tmp_path)
    prompts, outcome = run_on_triton(path, monkeypatch)
    reference = load_reference(path)
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_generate(reference, prompt, 4)[0]


@pytest.mark.parametrize("family", ["deepseek_v3", "minicpm3"])  # the paged latent; per-head K/V with padded V
def test_triton_kernels_run_latent_attention(family, tmp_path, monkeypatch):
    from live.test_mla_run import save_mla_model

    path = save_mla_model(family, tmp_path)
    prompts, outcome = run_on_triton(path, monkeypatch)
    reference = load_reference(path)
    for prompt, generation in zip(prompts, outcome.generations):
        assert generation.output_token_ids == reference_greedy(reference, prompt, 4)
