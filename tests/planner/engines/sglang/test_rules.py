"""SGLang's release rules (rules.py): each boundary read from the released wheels."""

from __future__ import annotations

import pytest
from hkv.planner.engines.sglang.rules import for_sglang_version, parse_sglang_version
from hkv.planner.errors import InvalidInputError

# version: (swa_ratio_cell, requested_running_token_cap, mamba_auto_extra_buffer, mamba_padding_slot,
#           multimodal_reservation, default_mem_fraction_modeled)
CASES = [
    ("0.5.10", (False, False, False, False, False, False)),
    ("0.5.11", (True, False, False, False, False, False)),  # HybridSWAPoolConfigurator's cell, 2026-05-07 wheel
    ("0.5.13", (True, False, False, False, False, False)),  # "auto" still becomes no_buffer
    ("0.5.14", (True, True, True, False, False, False)),  # tokens // 2 cap; _handle_mamba_radix_cache
    ("0.5.16", (True, True, True, False, False, False)),
    ("0.5.17", (True, True, True, True, False, False)),  # (mamba_budget_bytes - per_slot) // per_slot
    ("0.5.18", (True, True, True, True, True, False)),  # mm_runtime_reservation_gb
    ("0.5.22", (True, True, True, True, True, False)),
    ("0.5.23", (True, True, True, True, True, True)),
    ("v0.5.15.post1", (True, True, True, False, False, False)),
]


@pytest.mark.parametrize(("version", "expected"), CASES)
def test_rules_by_release(version: str, expected: tuple[bool, ...]) -> None:
    rules = for_sglang_version(version)
    assert (rules.swa_admission_floor, rules.swa_request_cap_pool) == (
        rules.version >= (0, 5, 16), rules.version >= (0, 5, 22))  # pool_configurator.py in 0.5.16 / 0.5.22's wheels
    assert (rules.swa_ratio_cell, rules.requested_running_token_cap, rules.mamba_auto_extra_buffer,
            rules.mamba_padding_slot, rules.multimodal_reservation, rules.default_mem_fraction_modeled) == expected


@pytest.mark.parametrize(("text", "match"), [("0.5.9", "outside the releases"), ("0.6.0", "outside the releases"),
                                             ("latest", "is not a version number")])
def test_bad_versions(text: str, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        parse_sglang_version(text)
