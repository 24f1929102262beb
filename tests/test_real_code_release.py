"""The release's own backend code is what runs (backends/real_code.py): a write-path fault planted
in a copy of a release's backend source is a finding against that backend, naming the file and
line of the release's write call, and never a skip."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_kvh

pytestmark = [pytest.mark.sglang, pytest.mark.slow, pytest.mark.e2e]

TRITON = Path("srt/layers/attention/triton_backend.py")
# The decode write's SWA loc: the one init_forward_metadata translated to SWA slots.
TRANSLATED = "swa_loc=self.forward_metadata.swa_out_cache_loc,"
# The fault: the decode write passes the untranslated full loc as its SWA loc, so the SWA layers
# are written at the full-pool slot ids (the class of a loc taken from the wrong forward field).
UNTRANSLATED = "swa_loc=forward_batch.out_cache_loc,"


def _installed_sglang() -> Path:
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("sglang is not installed (requirements/sglang-cpu.txt, README)")
    return Path(list(spec.submodule_search_locations)[0])


def _release_with_fault(folder: Path) -> tuple[str, list[int]]:
    """A copy of the installed release under `folder` (hard links: the files are only read), with
    triton's forward_decode writing SWA layers at the untranslated loc. Returns the SUT spec and
    the lines changed."""
    copy = folder / "sglang"
    shutil.copytree(
        _installed_sglang(), copy, copy_function=os.link, ignore=shutil.ignore_patterns("*.pyc")
    )
    source = (copy / TRITON).read_text()
    decode = source.index("    def forward_decode(")
    end = source.index("\n    def ", decode + 1)
    planted = source[:decode] + source[decode:end].replace(TRANSLATED, UNTRANSLATED) + source[end:]
    assert planted != source, "the release's forward_decode no longer passes the translated loc"
    (copy / TRITON).unlink()  # a new file: the hard link to the installed one is left untouched
    (copy / TRITON).write_text(planted)
    lines = [n for n, line in enumerate(planted.splitlines(), 1) if UNTRANSLATED in line]
    return f"sglang@{folder}", lines


def test_a_fault_planted_in_a_release_backend_is_a_finding_with_its_file_and_line(tmp_path):
    spec, planted = _release_with_fault(tmp_path / "release")
    out = tmp_path / "out"
    result = run_kvh(
        "run", "--sut", spec, "--backend", "triton", "--pool", "swa_mha", "--dtype", "bf16",
        "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "real code run: " in result.stderr and "triton" in result.stderr
    findings = [line for line in result.stdout.splitlines() if line.startswith("FINDING ")]
    assert findings, result.stdout[-3000:]
    assert all("/triton:decode@" in line for line in findings), findings
    site = re.search(r"release code: (triton_backend\.py:(\d+) in forward_decode)", findings[0])
    assert site, findings[0]
    # The release's decode write call starts a few lines above the planted keyword argument.
    assert any(0 <= line - int(site.group(2)) <= 8 for line in planted), (site.group(1), planted)
    assert "skipped" not in findings[0]


def test_the_unplanted_copy_passes_so_the_finding_is_the_fault(tmp_path):
    copy = tmp_path / "release" / "sglang"
    shutil.copytree(
        _installed_sglang(), copy, copy_function=os.link, ignore=shutil.ignore_patterns("*.pyc")
    )
    result = run_kvh(
        "run", "--sut", f"sglang@{tmp_path / 'release'}", "--backend", "triton",
        "--pool", "swa_mha", "--dtype", "bf16", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "real code run: " in result.stderr
