"""A tree of another commit, importable as `hkv` by a subprocess, for side-by-side timings.

The repository maps its top folders to the `hkv` package (pyproject's package-dir); a folder
holding `hkv/__init__.py` and links `hkv/runtime -> <tree>/runtime` ... on PYTHONPATH makes that
tree's code the one imported (PYTHONPATH entries come before the editable install's finder).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

PACKAGE_DIRS = ("cli", "planner", "runtime", "kernels", "model_specs")


class BaselineTree:
    """`git worktree add` of `commit` in a temporary folder (removed by `close`)."""

    def __init__(self, repo: Path, commit: str) -> None:
        self.repo = repo
        self._tmp = tempfile.TemporaryDirectory(prefix="hkv-baseline-")
        root = Path(self._tmp.name)
        self.tree = root / "tree"
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", "--quiet", str(self.tree), commit],
                       check=True)
        self.pythonpath = root / "path"
        package = self.pythonpath / "hkv"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        for name in PACKAGE_DIRS:
            (package / name).symlink_to(self.tree / name)

    def close(self) -> None:
        subprocess.run(["git", "-C", str(self.repo), "worktree", "remove", "--force", str(self.tree)], check=False)
        self._tmp.cleanup()
