"""What no code here establishes is not judged (issue 39): 0.5.12 to 0.5.14's set_mla_kv_buffer is
a GPU kernel reading row i for slot i, so the judge's older MLA doors raise UndefinedBehaviour on a
row count that differs from the slots (0.5.23's row mask raises IndexError, which is judged), and
such a check is a skip "undefined: ...", never a finding."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main as kvh
from harness.sut.load.environments import installed
from harness.sut.probe.source_capabilities import probe_source
from pools.judge import judge_module
from pools.judge.token_writes import UndefinedBehaviour
from tests.conftest import FIXTURES


def _mla_write(era: str, slots: int, rows: int) -> None:
    pool = judge_module(era).MLATokenToKVPool(
        size=8, page_size=1, dtype=torch.bfloat16, kv_lora_rank=4, qk_rope_head_dim=2,
        layer_num=1, device="cpu",
    )  # fmt: skip
    layer = type("Layer", (), {"layer_id": 0, "is_cross_attention": False})()
    loc = torch.arange(1, slots + 1)
    nope, rope = torch.ones(rows, 1, 4), torch.ones(rows, 1, 2)
    loc_info = loc if era in ("legacy", "kwarg") else judge_module(era).KVWriteLoc(loc)
    pool.set_mla_kv_buffer(layer, loc_info, nope, rope)


@pytest.mark.parametrize("era", ["legacy", "kwarg", "bundled"])
def test_an_older_mla_door_given_other_row_counts_is_undefined(era):
    with pytest.raises(UndefinedBehaviour):
        _mla_write(era, slots=2, rows=1)
    _mla_write(era, slots=2, rows=2)  # matching counts are judged as ever


def test_the_current_mla_door_given_other_row_counts_raises_as_0_5_23_does():
    with pytest.raises(IndexError):
        _mla_write("current", slots=2, rows=1)


@pytest.mark.parametrize("release", ["0.5.13", "0.5.14"])
def test_the_older_releases_mla_door_is_a_kernel_on_every_path(release):
    folder = installed(f"sglang=={release}")
    if folder is None:
        pytest.skip(f"sglang {release} is not in the release cache (kvh sut install)")
    assert probe_source(folder).mla_door_needs_gpu is True


def test_a_kwarg_pool_that_broadcasts_one_row_gets_no_finding_at_profile_ci(tmp_path, capsys):
    out = tmp_path / "out"
    code = kvh([
        "run", "--sut", str(FIXTURES / "kwarg_mla_broadcasts.py"), "--pool", "swa_mla",
        "--dtype", "fp8_e4m3", "--backend", "plain_mla", "--profile", "ci", "--out", str(out),
    ])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0 and "PASS" in printed, printed[-2000:]
    summary = (out / "summary.md").read_text()
    # The checks it leaves unjudged are counted, with the reason, among the skips.
    assert "skipped: undefined: a row count that differs from the slots" in summary
