"""Catalog lookup: short names, aliases, HF ids, case-insensitivity, and close-match errors."""

from __future__ import annotations

import pytest

from hkv.model_specs import SpecNotFoundError, catalog_entries, catalog_names, find_catalog_entry
from hkv.model_specs.catalog import CATALOG_DIR, lookup_catalog

LOOKUPS = [
    ("gemma-3-27b-it", "gemma-3-27b-it"),  # file stem
    ("gemma-3-27b", "gemma-3-27b-it"),  # stem without -it
    ("llama-3.1-8b", "llama-3.1-8b-instruct"),  # stem without -instruct
    ("google/gemma-3-27b-it", "gemma-3-27b-it"),  # HF id (_model_id)
    ("GOOGLE/Gemma-3-27B-IT", "gemma-3-27b-it"),  # case-insensitive
    ("Llama-3.1-8B-Instruct", "llama-3.1-8b-instruct"),  # repo part of the HF id
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-scout-17b-16e-instruct"),
    ("  qwen3-8b ", "qwen3-8b"),  # surrounding blanks ignored
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", "qwen3-next-80b-a3b"),
]


@pytest.mark.parametrize(("query", "expected"), LOOKUPS)
def test_lookup(query: str, expected: str) -> None:
    assert find_catalog_entry(query).name == expected


# The 34 configs shipped before issue 25, then its 12: DeepSeek-V3.2, GLM-5, GLM-5.2, DeepSeek-V4-Flash
# (sparse / compressed attention), MiniCPM3-4B, Sarvam-105B, A.X K1, OLMo-hybrid-7B (latent attention,
# gated delta-net), Falcon-40B-Instruct, DBRX-Instruct, StarCoder, StarCoder2-15B (classic dense),
# Gemma-4-26B-A4B (sliding + full MoE), MiniMax-M3, LFM2.5-1.2B-Instruct / 2.6B / 8B-A1B (short conv + full),
# Qwen3.8-27B (gated delta net + full).
ISSUE_25_ENTRIES = {"deepseek-v3.2", "glm-5", "glm-5.2", "deepseek-v4-flash", "minicpm3-4b", "sarvam-105b",
                    "a.x-k1", "olmo-hybrid-7b", "falcon-40b-instruct", "dbrx-instruct", "starcoder",
                    "starcoder2-15b", "gemma-4-26b-a4b", "minimax-m3", "lfm2.5-1.2b-instruct", "lfm2.5-2.6b",
                    "lfm2.5-8b-a1b", "qwen3.8-27b"}


def test_catalog_ships_every_config() -> None:
    assert ISSUE_25_ENTRIES <= set(catalog_names())
    assert len(catalog_names()) == 34 + len(ISSUE_25_ENTRIES)
    assert len(list(CATALOG_DIR.glob("*.json"))) == 34 + len(ISSUE_25_ENTRIES)
    assert all(e.model_id for e in catalog_entries())


def test_unknown_name_lists_close_matches() -> None:
    with pytest.raises(SpecNotFoundError) as err:
        find_catalog_entry("gemma-3-28b")
    message = str(err.value)
    assert "gemma-3-28b" in message and "did you mean" in message and "gemma-3-27b-it" in message
    assert "\n" not in message


def test_far_miss_lists_known_names() -> None:
    with pytest.raises(SpecNotFoundError, match="known names: a.x-k1, bamba-9b"):
        find_catalog_entry("zzzz")


def test_lookup_returns_none_for_miss() -> None:
    assert lookup_catalog("no-such-model") is None


def test_nemotron_56b_infinity_parses() -> None:
    # The copied config keeps a bare Infinity (time_step_limit); Python's json reads it.
    config = find_catalog_entry("nemotron-h-56b-base-8k").load_config()
    assert config["time_step_limit"][1] == float("inf")
