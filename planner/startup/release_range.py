"""ReleaseRange: the releases of one engine whose source an issue's text and threshold were read from."""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.release_version import format_version

Version = tuple[int, int, int]


@dataclass(frozen=True)
class ReleaseRange:
    """[first, last] of `engine`, both ends included; `last` None: every later release hkv models."""

    engine: str  # "vLLM", "SGLang"
    first: Version
    last: Version | None = None

    def holds(self, version: Version) -> bool:
        return self.first <= version and (self.last is None or version <= self.last)

    @property
    def text(self) -> str:
        """"vLLM 0.20.0+" or "vLLM 0.18.0-0.21.0"."""
        if self.last is None:
            return f"{self.engine} {format_version(self.first)}+"
        return f"{self.engine} {format_version(self.first)}-{format_version(self.last)}"


def text_in_force(texts: dict[ReleaseRange, str], version: Version) -> tuple[str, str]:
    """(text, releases) of the range that holds `version`. A release older than every range gets
    the oldest range's text, its releases saying the older source was not read."""
    for release_range, text in texts.items():
        if release_range.holds(version):
            return text, release_range.text
    oldest = min(texts, key=lambda r: r.first)
    return texts[oldest], f"{oldest.text} (older releases not read)"
