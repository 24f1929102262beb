"""Era detection works from what a module offers, for builtin eras and for user modules."""

from __future__ import annotations

import types

import pytest

from harness.sut.load.loader import SutLoadError, load_foreign
from harness.sut.probe.detect import detect, missing_names
from pools.builtin.eras import ERAS
from pools.builtin.sut import builtin_module


@pytest.mark.parametrize("era", list(ERAS))
def test_builtin_modules_are_detected_as_their_era(era):
    assert detect(builtin_module(era, "torch"))[0] == era


def test_user_module_era_is_detected(fixture_sut):
    assert load_foreign(fixture_sut("mla_no_unwrap")).era == "current"


def test_module_without_sglang_names_is_refused(tmp_path):
    module = tmp_path / "not_a_pool.py"
    module.write_text("x = 1\n")
    with pytest.raises(SutLoadError, match="lacks MHATokenToKVPool"):
        load_foreign(str(module))
    assert missing_names(types.SimpleNamespace(MHATokenToKVPool=1)) == [
        "MLATokenToKVPool",
        "SWAKVPool",
    ]


def test_failing_import_is_a_load_error(fixture_sut):
    with pytest.raises(SutLoadError, match="kvh_this_module_does_not_exist"):
        load_foreign(fixture_sut("broken_import"))


def test_missing_file_is_a_load_error():
    with pytest.raises(SutLoadError, match="does not exist"):
        load_foreign("no/such/pool.py")
