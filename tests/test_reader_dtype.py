"""A pool's K/V reader is part of the verdict (the reader_dtype oracle): an attention backend
reads the cache through get_key_buffer, so a reader that hands back the raw uint8 storage of an
fp8 cache instead of its fp8 view is a finding, although every byte written is right. The 0.5.23
mutation sample's survivor `!=` to `==` in MHATokenToKVPool._get_key_buffer asked for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_kvh, scenario_file
from tests.helpers.planted_release import copy_release, replace_file

POOL = Path("srt/mem_cache/memory_pool.py")
READER = """        if self.store_dtype != self.dtype:
            return self.k_buffer[local_layer_id].view(self.dtype)
        return self.k_buffer[local_layer_id]
"""


@pytest.mark.sglang
@pytest.mark.e2e
def test_a_key_reader_returning_the_raw_storage_is_a_finding(tmp_path: Path) -> None:
    copy = copy_release(tmp_path / "release")
    source = (copy / POOL).read_text()
    assert source.count(READER) == 1, "the release's MHA key reader no longer reads so"
    replace_file(copy, POOL, source.replace(READER, READER.replace("!=", "==", 1)))
    fp8 = scenario_file(tmp_path, lambda data: data["geometry"].update(dtype="fp8_e4m3"))
    done = run_kvh(
        *("run", "--sut", f"sglang@{tmp_path / 'release'}", "--pool", "mha"),
        *("--dtype", "fp8_e4m3", "--backend", "plain", "--scenario", fp8),
        *("--out", str(tmp_path / "out")),
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    findings = [line for line in done.stdout.splitlines() if line.startswith("FINDING ")]
    assert findings and all("[reader_dtype]" in line for line in findings), findings
    assert "returns torch.uint8 != baseline torch.float8_e4m3fn" in findings[0]
