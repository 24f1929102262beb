"""`--sut 'sglang>=A,<B'`: every release of the package index the specifier admits, side by side,
installed first where it is not; one that does not install is a skip with its reason."""

from __future__ import annotations

import subprocess

import pytest
from packaging.specifiers import SpecifierSet

from harness.plan import sut_choice
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import close_suts, resolve_suts
from harness.sut.load import environments
from harness.sut.load.release_index import ordered, release_range, releases_in
from tests.conftest import skip_unless_installed

INDEX = ordered(["0.5.11", "0.5.12", "0.5.12.post1", "0.5.15", "0.5.23", "0.5.24", "0.6.0rc1"])


def test_a_range_is_any_pep_440_specifier_but_one_exact_release():
    assert release_range("sglang==0.5.14") is None
    assert release_range("builtin") is None and release_range("my_pool.py") is None
    assert release_range("sglang>=0.5.12,<0.5.24") == SpecifierSet(">=0.5.12,<0.5.24")
    assert release_range("sglang ~= 0.5.12") == SpecifierSet("~=0.5.12")
    with pytest.raises(ValueError, match="sglang>=x"):
        release_range("sglang>=x")


def test_the_releases_it_admits_are_in_release_order_post_releases_in_pre_releases_out():
    admitted = releases_in(SpecifierSet(">=0.5.12,<0.5.24"), INDEX)
    assert admitted == [
        "sglang==0.5.12",
        "sglang==0.5.12.post1",
        "sglang==0.5.15",
        "sglang==0.5.23",
    ]
    assert releases_in(SpecifierSet(">0.5.24"), INDEX) == []


def test_a_range_resolves_to_each_release_and_one_that_will_not_install_is_kept_with_why(
    monkeypatch,
):
    skip_unless_installed("sglang==0.5.14")
    monkeypatch.setattr(sut_choice, "index_versions", lambda: ["0.5.13.9", "0.5.14", "0.5.99"])
    tried = []

    def install(spec, requirement, requirements):
        tried.append(spec)
        raise subprocess.CalledProcessError(1, ["pip"])

    monkeypatch.setattr(environments, "install", install)
    suts = resolve_suts(RunOptions(suts=["sglang>=0.5.14,<0.6"]))
    try:
        assert tried == ["sglang==0.5.99"]
        by_spec = {sut.spec: sut for sut in suts}
        assert set(by_spec) == {"sglang==0.5.14", "sglang==0.5.99"}
        assert by_spec["sglang==0.5.14"].loaded.era == "bundled"
        assert (
            by_spec["sglang==0.5.99"].load_error
            == "sglang==0.5.99: pip failed installing it (exit 1)"
        )
    finally:
        close_suts(suts)


def test_a_range_the_index_has_nothing_of_is_a_usage_error(monkeypatch):
    monkeypatch.setattr(sut_choice, "index_versions", lambda: ["0.5.14"])
    with pytest.raises(ValueError, match="no release on the package index matches"):
        resolve_suts(RunOptions(suts=["sglang>=9"]))
