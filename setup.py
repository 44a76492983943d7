"""Optional compiled build of the simulation path (everything else lives in pyproject.toml).

`HKV_COMPILE=1 pip install --no-build-isolation .` compiles the runtime modules every simulated
step goes through with mypyc: the same sources, their type annotations turned into C, so results
are identical (CI runs the test suite against both builds). It needs `mypy`, `setuptools`,
`wheel` and a C compiler in the build environment, hence --no-build-isolation. Without
HKV_COMPILE, and always for editable installs (a compiled module would shadow edits to its
source), hkv is pure Python.

mypyc names a module after its path, so the sources are staged under build/mypyc_src/hkv/ (the
installed names) before compiling; the wheel's .py files still come from the source folders.
"""

from __future__ import annotations

import os
import runpy
import shutil
import sys
from pathlib import Path

from setuptools import setup

# The modules every simulated step goes through (runtime/build_info.py owns the list).
COMPILED_RUNTIME_MODULES = runpy.run_path("runtime/build_info.py")["COMPILED_MODULES"]
STAGED_PACKAGES = ("runtime", "planner", "model_specs")  # what mypy must see to type the modules


def compiled_extensions() -> list:
    if os.environ.get("HKV_COMPILE", "0") in ("", "0"):
        return []
    if os.environ["HKV_COMPILE"] != "1":
        sys.exit(f"HKV_COMPILE must be 1 (compile) or 0 (pure Python), got {os.environ['HKV_COMPILE']!r}")
    if "editable_wheel" in sys.argv:
        sys.exit("HKV_COMPILE=1 needs a regular install (`pip install --no-build-isolation .`): "
                 "compiled modules would shadow the sources of an editable install")
    try:
        from mypyc.build import mypycify
    except ImportError:
        sys.exit("HKV_COMPILE=1 needs mypy in the build environment: "
                 "pip install mypy setuptools wheel && HKV_COMPILE=1 pip install --no-build-isolation .")
    stage = Path("build") / "mypyc_src" / "hkv"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    (stage / "__init__.py").write_text("")
    for package in STAGED_PACKAGES:
        shutil.copytree(package, stage / package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    paths = [str(stage / "runtime" / (module.replace(".", "/") + ".py")) for module in COMPILED_RUNTIME_MODULES]
    return mypycify(paths, opt_level="3")


setup(ext_modules=compiled_extensions())
