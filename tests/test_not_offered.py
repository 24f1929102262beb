"""A pool kind a SUT does not offer is a combination that cannot apply, not a skipped check: a
user's pool file with three pool classes is judged on those, and the verdict counts the kinds it
never claimed apart (SkipKind.NOT_OFFERED), beside the rows left out by design."""

from __future__ import annotations

import re

import pytest

from tests.conftest import FIXTURES, check_records, run_kvh

pytestmark = pytest.mark.e2e


def test_a_user_file_s_skips_are_only_real_skips(tmp_path):
    pools = "mha,unified_mha,hisparse_dsa"
    done = run_kvh(
        "run", "--sut", str(FIXTURES / "current_pools.py"), "--pool", pools, "--dtype", "bf16",
        "--backend", "plain", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = check_records(tmp_path)
    rows = rows[rows["sut"] != "model"]
    not_offered = rows[rows["skip_kind"] == "not_offered"]
    skipped = rows[(rows["outcome"] == "skipped") & (rows["skip_kind"] == "skipped")]
    # The file offers no unified MHA pool and no HiSparse DSA pool: those kinds' cells cannot apply.
    assert set(not_offered["pool"]) == {"unified_mha", "hisparse_dsa"}
    assert not_offered["detail"].str.contains("offers no").all()
    assert not skipped["detail"].str.contains("offers no").any()
    verdict = next(line for line in done.stdout.splitlines() if line.startswith("PASS"))
    said = re.search(
        r"(\d+) skipped.* (\d+) on pool kinds or backends the SUT does not offer", verdict
    )
    assert said and (int(said[1]), int(said[2])) == (len(skipped), len(not_offered))
