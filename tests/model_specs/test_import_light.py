"""model_specs must stay importable without torch or transformers (the CLI plans on any machine)."""

from __future__ import annotations

import subprocess
import sys


def test_resolve_does_not_import_torch_or_transformers() -> None:
    code = ("import sys, hkv.model_specs, hkv.model_specs.resolve; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'numpy')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
