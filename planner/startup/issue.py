"""StartupIssue and StartupVerdict: one engine's start-up answer for one plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StartupIssue:
    """One refusal or warning. `message` is the engine's own text where it prints one (numbers
    filled in as it formats them), else hkv's one line; `fix` the smallest option change that
    clears it ("--max-num-seqs <= 676"), None where no option does; `releases` the releases whose
    source the text and its threshold were read from (ReleaseRange.text)."""

    code: str
    message: str
    fix: str | None
    releases: str
    detail: str = ""  # hkv's one line on what it means for the user, where the engine's text leaves it out

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "fix": self.fix, "releases": self.releases,
                "detail": self.detail}


@dataclass(frozen=True)
class StartupVerdict:
    """`errors` in the order the engine meets them (the first is the one it raises); the engine
    starts when there is none."""

    engine: str  # "vllm", "sglang"
    version: str  # the release the verdict follows
    starts: bool
    errors: tuple[StartupIssue, ...] = ()
    warnings: tuple[StartupIssue, ...] = ()

    @classmethod
    def of(cls, engine: str, version: str, errors: tuple[StartupIssue, ...],
           warnings: tuple[StartupIssue, ...]) -> StartupVerdict:
        return cls(engine, version, not errors, errors, warnings)

    @property
    def first_error(self) -> StartupIssue | None:
        return self.errors[0] if self.errors else None

    def one_line(self) -> str | None:
        """The stderr line of an engine that will not start; None when it starts."""
        error = self.first_error
        if error is None:
            return None
        fix = f" (fix: {error.fix})" if error.fix else ""
        return f"{self.engine} {self.version} will not start: {error.message.split('. ')[0]}{fix}"

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "version": self.version, "starts": self.starts,
                "errors": [e.to_json() for e in self.errors], "warnings": [w.to_json() for w in self.warnings]}
