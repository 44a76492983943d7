"""The pieces of a live run without a model: paged pools, hook guards, sampler, prompt files,
model checks and the plan-vs-run report."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hkv.kernels import store_kv_cache  # noqa: E402
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, StateCacheSpec  # noqa: E402
from hkv.planner.layout import KVCacheGroup, Layout, Pool  # noqa: E402
from hkv.runtime.live.attention_hook import LayerBinding, PagedStep, paged_attention_hook  # noqa: E402
from hkv.runtime.live.live_run import CacheMeasurements, Generation, RunOutcome, StepTimings  # noqa: E402
from hkv.runtime.live.live_setup import UnsupportedModelError, open_model  # noqa: E402
from hkv.runtime.live.paged_kv_cache import PagedKVCache, UnsupportedLayoutError  # noqa: E402
from hkv.runtime.live.recurrent_hook import MixerKind, StateStep, StepSlot, bind_mixer, copy_states  # noqa: E402
from hkv.runtime.live.state_view import StateView  # noqa: E402
from hkv.runtime.live.prompt_file import Prompt, PromptFileError, read_prompt_file  # noqa: E402
from hkv.runtime.live.run_config import RunConfig  # noqa: E402
from hkv.runtime.live.run_report import build_report  # noqa: E402
from hkv.runtime.live.sampler import Sampler, SamplingConfig  # noqa: E402

BLOCK, HEADS, DIM, ELEM = 4, 2, 8, 4  # fp32


def two_group_layout(num_blocks: int = 6, pad_bytes: int = 0) -> Layout:
    """A full group (layers 0, 2) and a sliding group (layers 1, 3) sharing one 2-slot pool."""
    full = AttentionCacheSpec(CacheKind.FULL, HEADS, DIM, DIM, ELEM)
    sliding = AttentionCacheSpec(CacheKind.SLIDING, HEADS, DIM, DIM, ELEM, window_len=8)
    page = full.page_size_bytes(BLOCK) + pad_bytes
    groups = (KVCacheGroup(CacheKind.FULL, ("layers.0.attn", "layers.2.attn"), (0, 2), full, BLOCK, page),
              KVCacheGroup(CacheKind.SLIDING, ("layers.1.attn", "layers.3.attn"), (1, 3), sliding, BLOCK,
                           page))
    pool = Pool(0, "shared", num_blocks, 2 * page, 2)
    layout = Layout("test", groups, (pool,), 64, 8, pool.num_bytes)
    layout.check_integrity()
    return layout


@pytest.mark.parametrize("pad_bytes", [0, 64])
def test_pool_regions_are_layer_outer(pad_bytes):
    layout = two_group_layout(pad_bytes=pad_bytes)
    cache = PagedKVCache(layout, torch.float32, "cpu")
    page = layout.groups[0].page_size_bytes
    assert cache.num_bytes == layout.pools[0].num_bytes
    base = cache.raw_pools[0].data_ptr()
    offsets = {i: cache.layers[i].key_cache.data_ptr() - base for i in range(4)}
    # slot j of every group is region j: layers 0 and 1 share region 0, layers 2 and 3 region 1
    assert offsets == {0: 0, 1: 0, 2: 6 * page, 3: 6 * page}
    layer = cache.layers[2]
    assert layer.key_cache.shape == (6, BLOCK, HEADS, DIM)
    assert layer.key_cache[1].data_ptr() - layer.key_cache[0].data_ptr() == page  # one page per block
    assert layer.value_cache.data_ptr() - layer.key_cache.data_ptr() == BLOCK * HEADS * DIM * ELEM  # K then V


def test_groups_sharing_a_region_do_not_overlap():
    cache = PagedKVCache(two_group_layout(), torch.float32, "cpu")
    full, sliding = cache.layers[0], cache.layers[1]  # same region, disjoint block ids
    k = torch.randn(BLOCK, HEADS, DIM)
    store_kv_cache(k, k + 1, full.key_cache, full.value_cache, torch.arange(4, 8))  # block 1
    store_kv_cache(-k, -k, sliding.key_cache, sliding.value_cache, torch.arange(8, 12))  # block 2
    assert torch.equal(full.key_cache[1], k) and torch.equal(full.value_cache[1], k + 1)
    assert torch.equal(sliding.key_cache[2], -k)
    assert full.key_cache[2].data_ptr() == sliding.key_cache[2].data_ptr()  # block 2 belongs to one group


def state_layout(conv_bytes: int = 2) -> Layout:
    """A Mamba2-like group of layers 0 and 1: conv (3, 8) in `conv_bytes` elements (48 B at 2)
    then ssm (2, 4, 4) in 4-byte ones (128 B): 176 B of state in a 256-byte page (vllm-style
    padding); 5 blocks, 2 slots: 512 B per block."""
    spec = StateCacheSpec("mamba2", ((3, 8), (2, 4, 4)), (conv_bytes, 4))
    group = KVCacheGroup(CacheKind.RECURRENT, ("layers.0.mixer", "layers.1.mixer"), (0, 1), spec, 16, 256, 0, 1)
    return Layout("test", (group,), (Pool(0, "recurrent", 5, 512, 2),), 64, 8, 2560)


def test_state_views_pack_conv_then_ssm_in_their_dtypes():
    cache = PagedKVCache(state_layout(), torch.bfloat16, "cpu", state_dtypes=(torch.float32,))
    assert cache.num_bytes == 2560 and not cache.layers
    layer = cache.states[1]  # region 1
    assert (layer.conv.dtype, layer.conv.shape) == (torch.bfloat16, (5, 3, 8))
    assert (layer.ssm.dtype, layer.ssm.shape) == (torch.float32, (5, 2, 4, 4))
    assert layer.bytes_per_block == 176
    base = cache.raw_pools[0].data_ptr()
    for block in range(5):
        page = (1 * 5 + block) * 256  # region 1 starts after region 0's 5 pages
        assert layer.conv[block].data_ptr() - base == page
        assert layer.ssm[block].data_ptr() - base == page + 48
    region_0 = cache.raw_pools[0][:5 * 256].clone()
    layer.ssm[2] = 7.0
    raw = cache.raw_pools[0][(5 + 2) * 256 + 48:(5 + 2) * 256 + 176].view(torch.float32)
    assert torch.equal(raw, torch.full((32,), 7.0))
    assert torch.equal(cache.raw_pools[0][:5 * 256], region_0)  # region 0 untouched


def test_state_copies_read_every_source_first():
    cache = PagedKVCache(state_layout(conv_bytes=4), torch.float32, "cpu")
    for layer in cache.states.values():
        for block in range(5):
            layer.conv[block] = block
            layer.ssm[block] = 10 + block
    copy_states(cache.states, [(0, 1, 2), (0, 2, 1), (0, 3, 4)])  # a swap and a copy
    for layer in cache.states.values():
        assert [int(layer.conv[b, 0, 0]) for b in range(5)] == [0, 2, 1, 3, 3]
        assert [int(layer.ssm[b, 0, 0, 0]) for b in range(5)] == [10, 12, 11, 13, 13]


def test_state_view_keeps_kernel_minus_one_columns():
    """transformers hands the mixer [batch, conv_dim, kernel] windows; the pool keeps kernel - 1."""
    cache = PagedKVCache(state_layout(conv_bytes=4), torch.float32, "cpu")
    layer = cache.states[0]
    blocks = torch.tensor([3])
    fresh = StateView(0, layer, blocks, has_past=False)
    assert fresh.get_conv_state(0) is None and fresh.get_recurrent_state(0) is None
    x = torch.arange(16.0).view(1, 8, 2)  # 2 tokens, shorter than the kernel (4)
    full = fresh.update_conv_state(x, 0)
    assert full.shape == (1, 8, 4) and torch.equal(full[..., 2:], x) and not full[..., :2].any()
    fresh.update_recurrent_state(torch.ones(1, 2, 4, 4), 0)
    fresh.store()
    assert torch.equal(layer.conv[3], full[0, :, 1:].T)  # (kernel - 1, conv_dim)
    again = StateView(0, layer, blocks, has_past=True)
    conv = again.get_conv_state(0)
    assert conv.shape == (1, 8, 4) and not conv[..., 0].any() and torch.equal(conv[..., 1:], full[..., 1:])
    assert torch.equal(again.get_recurrent_state(0), torch.ones(1, 2, 4, 4))
    y = torch.full((1, 8, 3), -1.0)
    assert torch.equal(again.update_conv_state(y, 0), torch.cat([conv, y], dim=-1))


class _NewNames(torch.nn.Module):  # transformers >= 5.24: the cache is `cache`
    def forward(self, hidden_states, cache=None, attention_mask=None):
        self.got = {"cache": cache}
        return hidden_states


class _BothNames(torch.nn.Module):  # a forward that still lists the old name beside the new
    def forward(self, hidden_states, cache=None, cache_params=None, attention_mask=None):
        self.got = {"cache": cache, "cache_params": cache_params}
        return hidden_states


class _OldNames(torch.nn.Module):  # transformers < 5.24
    def forward(self, hidden_states, cache_params=None, attention_mask=None):
        self.got = {"cache_params": cache_params}
        return hidden_states


class _NoCache(torch.nn.Module):
    def forward(self, hidden_states, attention_mask=None):
        return hidden_states


@pytest.mark.parametrize("mixer, receives", [(_NewNames, "cache"), (_BothNames, "cache"),
                                             (_OldNames, "cache_params")])
def test_mixers_get_hkv_state_under_their_cache_name(mixer, receives):
    """The state view goes by whichever name the mixer's forward takes its cache by, newest
    first, and a caller's `cache=None` (what transformers' decoder layers pass) never replaces it."""
    layer = PagedKVCache(state_layout(conv_bytes=4), torch.float32, "cpu").states[0]
    module = mixer()
    module.layer_idx = 0
    slot = StepSlot()
    bind_mixer(module, MixerKind(("cache", "cache_params"), continues_chunks=True), layer, slot)
    slot.step = StateStep((0, 3), (False,), {layer.group_id: torch.tensor([1])}, (), torch.zeros(0, dtype=torch.long))
    out = module(torch.ones(1, 3, 8), cache=None)
    assert torch.equal(out, torch.ones(1, 3, 8))
    assert isinstance(module.got[receives], StateView)
    assert all(v is None for k, v in module.got.items() if k != receives)


def test_a_mixer_without_a_cache_argument_is_refused():
    module = _NoCache()
    module.layer_idx = 0
    layer = PagedKVCache(state_layout(conv_bytes=4), torch.float32, "cpu").states[0]
    with pytest.raises(UnsupportedLayoutError, match="none of cache, cache_params"):
        bind_mixer(module, MixerKind(("cache", "cache_params"), continues_chunks=True), layer, StepSlot())


def test_unsupported_layouts():
    with pytest.raises(UnsupportedLayoutError, match="4-byte K/V elements"):
        PagedKVCache(two_group_layout(), torch.float16, "cpu")
    state = StateCacheSpec("mamba2", ((4, 8), (2, 8)), (2, 4))  # 64 + 64 bytes
    group = KVCacheGroup(CacheKind.RECURRENT, ("layers.0.mixer",), (0,), state, 16, 64, 0, 1)
    layout = Layout("test", (group,), (Pool(0, "shared", 4, 64, 1),), 64, 8, 256)
    with pytest.raises(UnsupportedLayoutError, match="64 bytes cannot hold a 128-byte recurrent state"):
        PagedKVCache(layout, torch.float16, "cpu")
    fp8 = StateCacheSpec("mamba2", ((4, 8),), (1,))
    group = KVCacheGroup(CacheKind.RECURRENT, ("layers.0.mixer",), (0,), fp8, 16, 64, 0, 1)
    layout = Layout("test", (group,), (Pool(0, "shared", 4, 64, 1),), 64, 8, 256)
    with pytest.raises(UnsupportedLayoutError, match="1-byte recurrent state elements"):
        PagedKVCache(layout, torch.float16, "cpu")


def test_hook_needs_a_step_and_a_kept_window():
    class Attention(torch.nn.Module):
        layer_idx, scaling = 1, 0.25

    q = torch.randn(1, 4, 3, DIM)
    kv = torch.randn(1, HEADS, 3, DIM)
    with pytest.raises(RuntimeError, match="without hkv_step"):
        paged_attention_hook(Attention(), q, kv, kv, None)
    cache = PagedKVCache(two_group_layout(), torch.float32, "cpu")
    binding = LayerBinding(1, 1, 0, cache.layers[1].key_cache, cache.layers[1].value_cache, kept_window=8)
    step = PagedStep({1: binding}, torch.arange(3), torch.tensor([0, 3], dtype=torch.int32),
                     torch.tensor([3], dtype=torch.int32), 3, (), ())
    with pytest.raises(RuntimeError, match="keeps only 8 tokens"):
        paged_attention_hook(Attention(), q, kv, kv, None, sliding_window=16, hkv_step=step)


def test_sampler_greedy_top_p_and_seed():
    logits = torch.tensor([[0.0, 3.0, 1.0, 2.9], [5.0, 0.0, 0.0, 0.0]])
    assert Sampler(SamplingConfig()).sample(logits) == [1, 0]
    # top_p this small keeps only the most likely token, whatever the temperature
    assert Sampler(SamplingConfig(temperature=5.0, top_p=1e-6)).sample(logits) == [1, 0]
    wide = torch.zeros(64, 1000)
    first = Sampler(SamplingConfig(temperature=1.0, seed=3)).sample(wide)
    assert first == Sampler(SamplingConfig(temperature=1.0, seed=3)).sample(wide)
    assert first != Sampler(SamplingConfig(temperature=1.0, seed=4)).sample(wide)
    for bad in (dict(temperature=-1.0), dict(top_p=0.0), dict(top_p=1.5)):
        with pytest.raises(ValueError):
            SamplingConfig(**bad)


def test_prompt_files(tmp_path):
    text = tmp_path / "p.txt"
    text.write_text("Hello there\nsecond line\n")
    assert read_prompt_file(text) == [Prompt("Hello there\nsecond line", None)]
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"prompt": "a b"}\n\n{"token_ids": [5, 6]}\n')
    assert read_prompt_file(jsonl) == [Prompt("a b", None), Prompt(None, (5, 6))]


@pytest.mark.parametrize("content, message", [
    (b"", "empty prompt file"),
    (b"  \n\n", "empty prompt file"),
    (b"ab\x00cd", "binary"),
    (b"\xff\xfe\x00", "binary"),
    (b"caf\xe9", "not UTF-8"),
    (b'{"prompt": "a"}\n{"prompt": ', "line 2: invalid JSON"),
    (b'{"prompt": "a"}\n[1, 2]\n', "line 2: expected an object"),
    (b'{"prompt": ""}\n', "line 1: \"prompt\" must be a non-empty string"),
    (b'{"token_ids": [1, -2]}\n', "line 1: \"token_ids\" must be"),
    (b'{"token_ids": []}\n', "line 1: \"token_ids\" must be"),
    (b'{"token_ids": [1], "prompt": "x"}\n', "exactly one of"),
    (b'{"text": "x"}\n', "exactly one of"),
])
def test_bad_prompt_files(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(PromptFileError, match=message):
        read_prompt_file(path)


def test_missing_prompt_file(tmp_path):
    with pytest.raises(PromptFileError, match="no such prompt file"):
        read_prompt_file(tmp_path / "nope.txt")
    with pytest.raises(PromptFileError, match="is a directory"):
        read_prompt_file(tmp_path)


@pytest.mark.parametrize("prompt_format, expected", [
    ("auto", None),  # guessed JSONL: the line is not valid JSON
    ("text", [('{"a" is text', None)]),
])
def test_prompt_format_decides_brace_files(tmp_path, prompt_format, expected):
    path = tmp_path / "brace.txt"
    path.write_text('{"a" is text\n')
    if expected is None:
        with pytest.raises(PromptFileError, match="line 1: invalid JSON"):
            read_prompt_file(path, prompt_format)
    else:
        assert read_prompt_file(path, prompt_format) == expected


def test_prompt_format_jsonl_is_strict(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('plain words\n')
    with pytest.raises(PromptFileError, match="line 1: invalid JSON"):
        read_prompt_file(path, "jsonl")


def fake_weights(directory: Path) -> None:
    from safetensors.torch import save_file

    save_file({"x": torch.zeros(1)}, str(directory / "model.safetensors"))


# transformers 5.24's default MambaConfig: no attention layer (MLA and KDA run: test_mla_run.py)
MAMBA_ONLY = {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "conv_kernel": 4, "expand": 2,
              "hidden_size": 768, "intermediate_size": 1536, "num_hidden_layers": 32, "state_size": 16,
              "time_step_rank": 48, "vocab_size": 50280, "tie_word_embeddings": True}


def test_models_hkv_run_cannot_run_yet(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(MAMBA_ONLY))
    fake_weights(tmp_path)
    with pytest.raises(UnsupportedModelError, match="mamba yet: it has no attention layers"):
        open_model(str(tmp_path))


def outcome_with(peaks: dict[str, tuple[int, ...]], lens: dict[str, int], pool_peak: int) -> RunOutcome:
    cache = CacheMeasurements((0, 0), (pool_peak,), (0, 0), 10, 0, 0, len(peaks), peaks, lens)
    generations = [Generation(rid, (1,), [2], "length") for rid in peaks]
    return RunOutcome(generations, StepTimings(1, 1, 0.1, 0, 0.0, 0.1), cache)


def test_report_agrees_only_within_the_plan():
    layout = two_group_layout(num_blocks=20)
    t = layout.in_flight_tokens
    bounds = layout.blocks_per_request(30)  # full 8, sliding cdiv(min(7 + 8, 30), 4) + 1 = 5
    assert bounds == (8, 5) and t == 8
    planned = layout.pools[0].num_bytes
    lens = {"0": 30, "1": 6}
    lens30, cfg = (24, 6), RunConfig(max_new_tokens=6)  # the longest request: 30 tokens
    good = build_report(layout, planned, planned, lens30, cfg, outcome_with({"0": (8, 5), "1": (2, 2)}, lens, 19))
    assert good.agree and all(c.ok for c in good.checks)
    over = build_report(layout, planned, planned, lens30, cfg, outcome_with({"0": (8, 6), "1": (2, 2)}, lens, 19))
    failed = [c for c in over.checks if not c.ok]
    assert not over.agree and len(failed) == 1 and (failed[0].predicted, failed[0].measured) == (5, 6)
    full_pool = build_report(layout, planned, planned, lens30, cfg, outcome_with({"0": (1, 1)}, {"0": 3}, 20))
    assert not full_pool.agree
    wrong_bytes = build_report(layout, planned, planned - 1, lens30, cfg, outcome_with({"0": (1, 1)}, {"0": 3}, 2))
    assert not wrong_bytes.agree
    assert json.loads(json.dumps(asdict(good)))["agree"] is True
