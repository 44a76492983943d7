"""The eviction policy a layout gets by default: LRU with recurrent groups, group-aware otherwise."""

from __future__ import annotations

import pytest
from rt_layouts import FULL, RECURRENT, SLIDING, make_group, make_layout

from hkv.runtime.kv_cache.cache_config import EvictionPolicy
from hkv.runtime.kv_cache.default_eviction import default_eviction_policy


@pytest.mark.parametrize(("kinds", "policy"), [
    ((FULL,), EvictionPolicy.GROUP_AWARE),
    ((FULL, SLIDING), EvictionPolicy.GROUP_AWARE),
    ((FULL, RECURRENT), EvictionPolicy.LRU),
    ((SLIDING, FULL, RECURRENT), EvictionPolicy.LRU),
])
def test_default_policy_by_the_layouts_kinds(kinds, policy) -> None:
    groups = [make_group(k, 4, window=8) if k is SLIDING else make_group(k, 4) for k in kinds]
    assert default_eviction_policy(make_layout(groups, [64])) is policy
