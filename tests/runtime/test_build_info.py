"""The build under test is the one CI meant to test: pure Python (the README's editable install)
or, in CI's compiled stage (HKV_EXPECT_BUILD=mypyc), every hot module compiled."""

import os

import pytest

from hkv.runtime.build_info import COMPILED_MODULES, is_compiled, runtime_build

EXPECTED_BUILD = os.environ.get("HKV_EXPECT_BUILD", "python")


def test_runtime_build_is_the_expected_one():
    assert runtime_build() == EXPECTED_BUILD, (
        f"testing a {runtime_build()} build, expected {EXPECTED_BUILD} "
        "(set HKV_EXPECT_BUILD=mypyc to test a HKV_COMPILE=1 install)")


@pytest.mark.parametrize("module_name", COMPILED_MODULES)
def test_each_hot_module_matches_the_build(module_name):
    assert is_compiled(module_name) == (EXPECTED_BUILD == "mypyc")


def test_cold_modules_stay_python():
    # The live run and the workload readers are never compiled (torch, rarely hot).
    assert not is_compiled("simulation.workload_gen") and not is_compiled("simulation.traces.trace_source")
