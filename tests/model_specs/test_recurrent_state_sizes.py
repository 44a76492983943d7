"""Per-request recurrent state bytes of catalog models, checked against hand arithmetic."""

from __future__ import annotations

import pytest

from hkv.model_specs import CacheOptions, RecurrentDesc, StateCacheSpec, load_model_spec


def _state(name: str, opts: CacheOptions) -> StateCacheSpec:
    spec = load_model_spec(name)
    desc = next(c for c in spec.cache_layers if isinstance(c, RecurrentDesc))
    return desc.cache_spec(opts)


CASES = [
    # Bamba-9B Mamba2: 128 heads x 64, d_state 128, n_groups 1, conv 4, hidden 4096 x expand 2 = 8192.
    # conv 3 x (8192 + 2*1*128) = 25,344; ssm 128*64*128 = 1,048,576; bf16 -> 2 x 1,073,920 = 2,147,840.
    ("bamba-9b", 1, 2_147_840),
    # TP > 1: n_groups 1 does not divide TP, so vLLM replicates the B/C group to TP groups first.
    # TP2: conv 3 x (8192 + 2*2*128)/2 = 3 x 4352 = 13,056 + ssm 64*64*128 = 524,288 -> x2 = 1,074,688
    ("bamba-9b", 2, 1_074_688),
    # TP4: conv 3 x (8192 + 2*4*128)/4 = 3 x 2304 = 6,912 + ssm 32*64*128 = 262,144 -> x2 = 538,112
    ("bamba-9b", 4, 538_112),
    # Granite-4.0-H-Small: same Mamba2 dims (class defaults 128 heads x 64, 1 group; d_state 128).
    ("granite-4.0-h-small", 1, 2_147_840),
    # Nemotron-H-8B: 128 heads x 64, d_state 128, n_groups 8, conv 4; ssm fp32 (vLLM default for NemotronH).
    # conv 3 x (8192 + 2*8*128) = 30,720 x 2 B = 61,440; ssm 1,048,576 x 4 B = 4,194,304 -> 4,255,744.
    ("nemotron-h-8b-base-8k", 1, 4_255_744),
    # Nemotron-Nano-9B-v2: 128 heads x 80 = 10,240; conv 3 x (10,240 + 2048) = 36,864 x 2 = 73,728;
    # ssm 128*80*128 = 1,310,720 x 4 = 5,242,880 -> 5,316,608.
    ("nvidia-nemotron-nano-9b-v2", 1, 5_316_608),
    # Jamba Mamba1: intermediate 2*4096 = 8192, d_conv 4, d_state 16.
    # conv 3 x 8192 = 24,576; ssm 8192 x 16 = 131,072; bf16 -> 311,296. TP2 halves both.
    ("jamba-v0.1", 1, 311_296),
    ("jamba-v0.1", 2, 155_648),
    # Qwen3-Next GDN: k heads 16 x 128, v heads 32 x 128, conv 4.
    # conv 3 x (2*2048 + 4096) = 24,576; ssm 32*128*128 = 524,288; bf16 -> 1,097,728.
    ("qwen3-next-80b-a3b", 1, 1_097_728),
    ("qwen3-next-80b-a3b", 2, 548_864),  # conv 3 x 4096 = 12,288; ssm 16*128*128 = 262,144 -> x2
    # MiniMax-M1 lightning: 64 heads x 128 x 128 = 1,048,576, model dtype bf16 (vLLM) -> 2,097,152; no conv.
    ("minimax-m1", 1, 2_097_152),
    ("minimax-m1", 8, 262_144),  # 8 heads x 128 x 128 x 2
    # Kimi-Linear KDA: 32 heads x 128, conv 4: conv 3 x (3*4096) = 36,864 x 2 B = 73,728;
    # recurrent 32*128*128 = 524,288 x 4 B (vLLM keeps KDA state fp32) = 2,097,152 -> 2,170,880.
    ("kimi-linear-48b-a3b-instruct", 1, 2_170_880),
    # Falcon-H1-7B: 24 heads x 128 = 3072, d_state 256, 1 group, conv 4:
    # conv 3 x (3072 + 512) = 10,752; ssm 24*128*256 = 786,432; bf16 -> 1,594,368.
    ("falcon-h1-7b", 1, 1_594_368),
    # OLMo-Hybrid-7B GDN: k heads 30 x 96 = 2880, v heads 30 x 192 = 5760, conv 4.
    # conv 3 x (2*2880 + 5760) = 34,560; ssm 30*96*192 = 552,960; bf16 -> 1,175,040. TP2 halves both.
    ("olmo-hybrid-7b", 1, 1_175_040),
    ("olmo-hybrid-7b", 2, 587_520),
]


@pytest.mark.parametrize(("name", "tp", "expected_bytes"), CASES)
def test_state_bytes(name: str, tp: int, expected_bytes: int) -> None:
    assert _state(name, CacheOptions(tp=tp)).state_bytes == expected_bytes


def test_bamba_shapes_and_dtypes() -> None:
    state = _state("bamba-9b", CacheOptions(tp=1))
    assert state.variant == "mamba2"
    assert state.shapes == ((3, 8448), (128, 64, 128))
    assert state.dtype_bytes == (2, 2)


def test_lightning_state_has_no_conv() -> None:
    state = _state("minimax-m1", CacheOptions(tp=1))
    assert state.shapes == ((64, 128, 128),)


def test_ssm_dtype_override_wins_over_config_default() -> None:
    # Nemotron-H-8B with fp16 ssm state: conv 61,440 + ssm 1,048,576 x 2 = 2,158,592.
    state = _state("nemotron-h-8b-base-8k", CacheOptions(tp=1, ssm_dtype_bytes=2))
    assert state.state_bytes == 2_158_592


def test_lightning_state_ignores_the_ssm_dtype() -> None:
    # vLLM's linear_attention_state_dtype reads only the mamba cache (model) dtype: MiniMax-M1 stays
    # 64 x 128 x 128 x 2 B = 2,097,152 with an fp32 SSM dtype, and follows a --dtype float32 to 4 B.
    assert _state("minimax-m1", CacheOptions(tp=1, ssm_dtype_bytes=4)).state_bytes == 2_097_152
    assert _state("minimax-m1", CacheOptions(tp=1, conv_dtype_bytes=4)).state_bytes == 4_194_304


def test_config_mamba_ssm_cache_dtype_is_the_default() -> None:
    # Nemotron-3-Nano sets mamba_ssm_cache_dtype float32: 64 heads x 64, d_state 128, 8 groups, conv 4.
    # conv 3 x (4096 + 2048) = 18,432 x 2 = 36,864; ssm 64*64*128 = 524,288 x 4 = 2,097,152 -> 2,134,016.
    state = _state("nemotron-3-nano-30b-a3b", CacheOptions(tp=1))
    assert state.dtype_bytes == (2, 4)
    assert state.state_bytes == 2_134_016
