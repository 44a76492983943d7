"""Engine version strings as users paste them (`vllm --version`, `pip show`, a start-up log), read
as the release whose sizing rules they follow.

| given                          | read as                              | why                                  |
|--------------------------------|--------------------------------------|--------------------------------------|
| 0.24.0, v0.24.0, 0.24          | 0.24.0                               | a release                            |
| 0.10.2.post1, 0.10.1.1         | 0.10.2, 0.10.1 (post / hotfix)       | a rebuild of that release            |
| 0.29.0+cu130, 0.11.0+nv25.11   | 0.29.0, 0.11.0 (local build)         | the release, built elsewhere         |
| 0.22.1rc1                      | 0.22.1 (release candidate)           | cut from 0.22.1's release branch     |
| 0.23.1rc1 (0.23.1 never shipped) | 0.23.0                             | the newest release at or before it   |
| 0.16.1rc1.dev265+g1a2b3c4      | 0.16.0 (dev build)                   | the newest release before 0.16.1     |
| 0.0.0.dev1+g5f55db35e          | refused: a source build              | no release number to read            |

A dev build of X.Y.Z (X.Y.Z.devN or X.Y.ZrcM.devN: setuptools-scm's number for a commit on the
way to X.Y.Z) follows the newest release *before* X.Y.Z, even where X.Y.Z shipped. A dev build
holds every commit of that earlier release but only some of X.Y.Z's, and hkv's rule tables switch
where a change first shipped, so the earlier release's rules are the ones it surely has. The
engines' nightly builds are numbered for the patch after the last release (vLLM 0.16.1rc1.devN
after 0.16.0, while the next release was 0.17.0), so this reads them as the release they follow.
A release candidate without .dev is the release's own code (cut from its branch): it follows
X.Y.Z, or the newest release before X.Y.Z when X.Y.Z never shipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hkv.planner.errors import InvalidInputError

Version = tuple[int, int, int]

# PEP 440 as engines print it: release, pre-release, post, dev, local label.
_VERSION = re.compile(r"^v?(?P<release>\d+(?:\.\d+)*)(?P<pre>(?:a|b|rc)\d*)?(?:[.-]?post(?P<post>\d*))?"
                      r"(?:[.-]?dev(?P<dev>\d*))?(?:\+(?P<local>[a-z0-9]+(?:[.\-_][a-z0-9]+)*))?$", re.IGNORECASE)
# setuptools-scm's number for a checkout without release tags (0.1.devN; SGLang's fallback 0.0.0.devN).
_SOURCE_BUILD_RELEASES = ((0, 0, 0), (0, 1, 0))


@dataclass(frozen=True)
class EngineReleases:
    """One engine's release history, as far as hkv models it."""

    engine: str  # "vLLM"
    field: str  # the option's config field: "vllm_version"
    releases: tuple[Version, ...]  # every release hkv models, oldest first (post releases folded in)
    dev_example: str  # what `<engine> --version` prints for a nightly

    @property
    def oldest(self) -> Version:
        return self.releases[0]

    @property
    def newest(self) -> Version:
        return self.releases[-1]


@dataclass(frozen=True)
class ReleaseReading:
    """A version string and the release whose rules it follows."""

    text: str  # as given, stripped
    release: Version
    build: str  # "release", "post release", "hotfix release", "local build", "release candidate", "dev build"
    newer_than_modeled: bool = False  # read as the newest release hkv models (logs only)

    @property
    def release_text(self) -> str:
        return format_version(self.release)

    def note(self, engine: str) -> str | None:
        """The one line that says how the text was read; None for a plain release number."""
        if self.newer_than_modeled:
            return (f"{engine} {self.text} is newer than the releases hkv models: read as {self.release_text}, "
                    "the newest")
        if self.build == "release":
            return None
        return f"{engine} {self.text} read as release {self.release_text} ({self.build})"


def format_version(version: Version) -> str:
    return ".".join(str(part) for part in version)


def read_release(text: str, history: EngineReleases, *, newer_as_newest: bool = False) -> ReleaseReading:
    """The release `text` follows (module docstring). InvalidInputError, naming `history.field`,
    for text that is no version, a source build, or a release outside `history`'s; a newer one
    reads as the newest when `newer_as_newest` (a log from a release hkv has not seen)."""
    stripped = text.strip()
    match = _VERSION.match(stripped)
    if match is None:
        raise InvalidInputError(
            f"{history.field} {text!r} is not a version number: pass a release such as "
            f"{format_version(history.newest)}, or the version `{history.engine.lower()} --version` prints "
            f"(e.g. {history.dev_example})", fields=(history.field,))
    parts = [int(part) for part in match["release"].split(".")]
    stated = (parts[0], parts[1] if len(parts) > 1 else 0, parts[2] if len(parts) > 2 else 0)
    is_dev = match["dev"] is not None
    if is_dev and stated in _SOURCE_BUILD_RELEASES:
        raise InvalidInputError(
            f"{history.engine} {stripped} is a source build without a release number (its checkout had no "
            f"release tag); pass the release it was built from, e.g. {history.field} "
            f"{format_version(history.newest)} (`git describe --tags` in the checkout names it)",
            fields=(history.field,))
    build = _build(match, extra_parts=len(parts) > 3)
    release: Version | None
    if is_dev:
        release = _release_before(stated, history)
    elif match["pre"]:
        release = _release_at_or_before(stated, history)
    else:
        release = stated
    if release is None or release < history.oldest or release > history.newest and not newer_as_newest:
        after = f" (a dev build follows the release before {format_version(stated)})" if is_dev else ""
        raise InvalidInputError(
            f"{history.field} {stripped}{after} is outside the releases hkv models ({format_version(history.oldest)} "
            f"to {format_version(history.newest)}); pass one of those", fields=(history.field,))
    if release > history.newest:
        return ReleaseReading(stripped, history.newest, build, newer_than_modeled=True)
    return ReleaseReading(stripped, release, build)


def _build(match: re.Match[str], *, extra_parts: bool) -> str:
    if match["dev"] is not None:
        return "dev build"
    if match["pre"]:
        return "release candidate"
    if match["post"] is not None:
        return "post release"
    if extra_parts:
        return "hotfix release"
    return "local build" if match["local"] else "release"


def _release_before(stated: Version, history: EngineReleases) -> Version | None:
    """The newest release before `stated`; None when it is older than hkv's. Past the release
    after the newest hkv knows (a nightly of 0.40 when hkv knows up to 0.33) the release before is
    not known: `stated` itself, which only a log reads (as the newest)."""
    newest = history.newest
    if stated > (newest[0], newest[1] + 1, 0):
        return stated
    earlier = [release for release in history.releases if release < stated]
    return earlier[-1] if earlier else None


def _release_at_or_before(stated: Version, history: EngineReleases) -> Version | None:
    """`stated` where it shipped, else the newest release before it; None when older than hkv's."""
    if stated > history.newest:
        return stated
    earlier = [release for release in history.releases if release <= stated]
    return earlier[-1] if earlier else None
