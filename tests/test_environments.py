"""Release environments (harness/sut/load/environments.py): each real SGLang release, loaded in
isolation, is detected as its era; and `kvh sut install` finds the shared CPU requirements.

The four releases install with `kvh sut install sglang==X` (about 40 s each); where one is
absent its test skips with that command as the reason."""

from __future__ import annotations

import re

import pytest

from backends.sglang_names import AITER_LAYOUT_SWITCH
from harness.cli.sut import REQUIREMENTS
from harness.sut.load.environments import load_isolated, not_ready_reason

RELEASE_ERAS = {"0.5.12": "legacy", "0.5.13": "kwarg", "0.5.14": "bundled", "0.5.23": "current"}


@pytest.mark.sglang
@pytest.mark.parametrize("version", list(RELEASE_ERAS))
def test_era_is_detected_from_what_each_release_offers(version):
    spec = f"sglang=={version}"
    reason = not_ready_reason(spec)
    if reason:
        pytest.skip(reason)
    loaded = load_isolated(spec)
    with loaded.module:
        assert (loaded.era, loaded.version) == (RELEASE_ERAS[version], version)
    # ROCm's 5-D layout: a release whose environment registry has no layout switch (0.5.12) has
    # none, so the kind cannot apply; one that has it (0.5.13 on) builds none on this machine,
    # a skip with that reason.
    absent, unoffered = dict(loaded.absent), dict(loaded.unoffered)
    if version == "0.5.12":
        assert f"reads no {AITER_LAYOUT_SWITCH}" in absent["MHATokenToKVPoolAiter5D"]
    else:
        assert "builds no 5-D layout on this machine" in unoffered["MHATokenToKVPoolAiter5D"]


def test_sut_install_finds_the_shared_cpu_requirements():
    # `kvh sut install` pip-installs this file before any release; a wrong path fails only there.
    assert REQUIREMENTS.is_file() and REQUIREMENTS.name == "sglang-cpu.txt"


def test_tests_ask_the_harness_for_the_release_cache():
    """A test that built `~/.cache/kvh/suts` itself skipped installed releases under $KVH_CACHE;
    every test asks harness.sut.load.environments.cache_root (or not_ready_reason) instead."""
    from pathlib import Path

    own_path = re.compile(r"""["']kvh["']\s*/\s*["']suts["']|\.cache/kvh""")
    tests = Path(__file__).resolve().parent
    building = [
        str(path.relative_to(tests))
        for path in sorted(tests.rglob("*.py"))
        if path != Path(__file__).resolve() and own_path.search(path.read_text())
    ]
    assert not building, building
