"""Suite-wide defaults: no test reaches the network or a user's caches unless it says so.

HF_HUB_OFFLINE=1 makes an HF id resolve from the HF cache or the catalog (and say so) instead of
asking the Hub; hkv's own hub cache points at an empty folder. Tests of the Hub client lift both
with the `fake_hub` fixture (tests/model_specs/fake_hub.py), which serves files they write on
127.0.0.1 through HF_ENDPOINT.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _offline_hub(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HKV_HUB_CACHE", str(tmp_path_factory.getbasetemp() / "hkv-hub-cache-unused"))
