"""Version strings as `vllm --version`, pip and logs print them, read as the release they follow
(planner/engines/release_version.py); expected releases from PyPI's release lists."""

import pytest
from hkv.planner.engines.sglang.rules import read_sglang_version
from hkv.planner.engines.vllm.rules import read_vllm_version
from hkv.planner.errors import InvalidInputError


@pytest.mark.parametrize("text, release, build", [
    ("0.16.1rc1.dev265+g1a2b3c4", "0.16.0", "dev build"),  # 0.16.1 never shipped; the nightly follows 0.16.0
    ("0.23.1rc1.dev531+ga65f93fb2", "0.23.0", "dev build"),
    ("0.21.0rc2.dev3", "0.20.2", "dev build"),  # the newest release before 0.21.0
    ("0.17.1.dev4", "0.17.0", "dev build"),  # before 0.17.1, although 0.17.1 shipped
    ("0.34.0rc1.dev5", "0.33.0", "dev build"),  # the nightly after hkv's newest
    ("0.23.1rc1", "0.23.0", "release candidate"),  # 0.23.1 never shipped
    ("0.22.1rc1", "0.22.1", "release candidate"),
    ("0.11.0+nv25.11", "0.11.0", "local build"),
    ("0.11.0+582e4e37.nv25.11", "0.11.0", "local build"),
    ("0.29.0+cu130", "0.29.0", "local build"),
    ("0.10.2.post1", "0.10.2", "post release"),
    ("0.10.1.1", "0.10.1", "hotfix release"),
    ("v0.20.0", "0.20.0", "release"),
    ("0.24", "0.24.0", "release"),
])
def test_vllm_versions_read_as_releases(text, release, build):
    reading = read_vllm_version(text)
    assert (reading.release_text, reading.build) == (release, build)


def test_the_note_says_the_mapping_once_and_nothing_for_a_release():
    assert read_vllm_version("0.16.1rc1.dev265+g1a2b3c4").note("vLLM") == (
        "vLLM 0.16.1rc1.dev265+g1a2b3c4 read as release 0.16.0 (dev build)")
    assert read_vllm_version("v0.20.0").note("vLLM") is None


@pytest.mark.parametrize("text, fragment", [
    ("latest", "'latest' is not a version number: pass a release such as 0.33.0"),
    ("0.16.x", "is not a version number"),
    ("0.34.0", "outside the releases hkv models (0.10.0 to 0.33.0)"),
    ("0.34.0rc1", "outside the releases"),
    ("0.40.0.dev1", "outside the releases"),  # the release before 0.40 is not known
    ("0.10.0rc1.dev1", "a dev build follows the release before 0.10.0"),
    ("0.1.dev1+g1a2b3c4", "source build without a release number"),
])
def test_vllm_versions_refused(text, fragment):
    with pytest.raises(InvalidInputError) as err:
        read_vllm_version(text)
    assert fragment in str(err.value) and err.value.fields == ("vllm_version",)


@pytest.mark.parametrize("text, release, build", [
    ("v0.5.21", "0.5.21", "release"),
    ("0.5.15.post1", "0.5.15", "post release"),
    ("0.5.22.dev5+g1a2b3c4", "0.5.21", "dev build"),
    ("0.5.23rc0", "0.5.23", "release candidate"),
])
def test_sglang_versions_read_as_releases(text, release, build):
    reading = read_sglang_version(text)
    assert (reading.release_text, reading.build) == (release, build)


@pytest.mark.parametrize("text, fragment", [
    ("0.5.2rc2", "outside the releases hkv models (0.5.10 to 0.5.23)"),
    ("0.0.0.dev1+g5f55db35e", "SGLang 0.0.0.dev1+g5f55db35e is a source build without a release number"),
    ("main", "is not a version number: pass a release such as 0.5.23"),
])
def test_sglang_versions_refused(text, fragment):
    with pytest.raises(InvalidInputError) as err:
        read_sglang_version(text)
    assert fragment in str(err.value) and err.value.fields == ("sglang_version",)
