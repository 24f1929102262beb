"""A real older release in its own worker process, beside the builtin pools in one verdict: the
path the nightly job takes for every release but the one installed in process.

The README's test command installs 0.5.14 into the release cache (`kvh sut install`), so CI
runs this on every submission; elsewhere it skips with that command as the reason."""

from __future__ import annotations

import pytest

from tests.conftest import check_records, run_kvh, skip_unless_installed

RELEASE = "sglang==0.5.14"


@pytest.mark.sglang
def test_an_isolated_release_is_judged_beside_the_builtin_pools(tmp_path):
    skip_unless_installed(RELEASE)
    out = tmp_path / "out"
    result = run_kvh(
        "run",
        *("--sut", RELEASE, "--sut", "builtin"),
        *("--pool", "mha,swa_mha,mla", "--dtype", "bf16", "--out", str(out)),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "era bundled (from its capabilities" in result.stderr
    records = check_records(out)
    release = records[records.sut == RELEASE]
    assert set(release.pool) == {"mha", "swa_mha", "mla"}
    assert set(records.sut) >= {RELEASE, "builtin"}
    assert (release.outcome == "pass").sum() > 0 and not (release.outcome == "finding").any()
    # The narrowed SWA write of #29460 is in 0.5.14: the release reproduces it, through the worker.
    narrowed = release[release.divergence.str.contains("unsliced-swa-loc")]
    assert set(narrowed.pool) == {"swa_mha"}
    assert (narrowed.outcome == "known_divergence").all()
